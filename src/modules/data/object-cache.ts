/**
 * The JSON of objects `GET /data/{id}` read on SQLite, each filed under its account's data version
 * (migration 0029: a counter that triggers raise on every create, change or delete of one of the
 * account's objects, whoever writes). A request reads the version first and takes an object from
 * here only when it was filed under that same version, so nothing committed before the request's
 * version read is ever missed: an object read after the version was read is filed under that
 * (older or equal) version, never a newer one. A write to an account makes all its entries stale;
 * they are replaced as they are read again, or dropped oldest first when the cache is full.
 *
 * Bounded by the characters of JSON held (CACHE_CHARS, about that many bytes for ASCII text; 16 Mi
 * keeps the peak RSS target of issue 9 in reach, and holds the benchmark's 10,000 read objects); an
 * object larger than MAX_ENTRY_CHARS is not kept.
 */
const CACHE_CHARS = 16 * 1024 * 1024;
const MAX_ENTRY_CHARS = 64 * 1024;

interface Entry {
  version: number;
  json: string;
}

export class ObjectJsonCache {
  readonly #entries = new Map<string, Entry>();
  #chars = 0;

  constructor(
    readonly maxChars = CACHE_CHARS,
    readonly maxEntryChars = MAX_ENTRY_CHARS,
  ) {}

  static key(accountId: string, id: string): string {
    return `${accountId}/${id}`;
  }

  /** The object's JSON if it was filed under `version`. */
  get(key: string, version: number): string | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.version === version ? entry.json : undefined;
  }

  /** Files `json` under `version`, read after that version was read. */
  set(key: string, version: number, json: string): void {
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#chars -= old.json.length;
      this.#entries.delete(key);
    }
    if (json.length > this.maxEntryChars) return;
    while (this.#chars + json.length > this.maxChars && this.#entries.size > 0) {
      const [oldestKey, oldest] = this.#entries.entries().next().value as [string, Entry];
      this.#entries.delete(oldestKey);
      this.#chars -= oldest.json.length;
    }
    this.#entries.set(key, { version, json });
    this.#chars += json.length;
  }

  get size(): number {
    return this.#entries.size;
  }

  get chars(): number {
    return this.#chars;
  }
}

const caches = new WeakMap<object, ObjectJsonCache>();

/** The cache of one open database (tests open many in one process). */
export function objectCacheOf(db: object): ObjectJsonCache {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = new ObjectJsonCache();
    caches.set(db, cache);
  }
  return cache;
}
