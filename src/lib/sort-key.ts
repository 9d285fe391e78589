/**
 * The key titles sort by: "A to Z, case-insensitive" (decisions §5), with accents and other
 * combining marks ignored and compatibility forms (full-width letters, ligatures) read as their
 * plain letters, so `Äpfel` sorts beside `apfel`, not after `zoo`. Equal keys fall back to the id.
 * An ASCII title's key is the title lower-cased. Migration 0012 holds a frozen copy of this
 * function for the rows written before it; change both together, with a new migration.
 */
export function titleSortKey(title: string): string {
  return title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}
