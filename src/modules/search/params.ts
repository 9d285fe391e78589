// `filter`, `from` and `to` of GET /search (decisions §6), turned into checked values or 400s.
import { AppError, invalidField } from '../../http/errors.ts';
import { DATA_TYPES } from '../../search/document.ts';
import type { SearchFilter } from '../../search/search-index.ts';

const MAX_METADATA_KEY = 64;
/** Filters per search. */
export const MAX_FILTERS = 20;
/**
 * Characters per filter: the longest that can match anything (`metadata.`, a 64-character key,
 * `:` and a 1,000-character value), with room to spare.
 */
const MAX_FILTER_LENGTH = 1100;

function invalidFilter(filter: string, why: string): AppError {
  const message = `filter ${JSON.stringify(filter)} ${why}.`;
  return new AppError('invalid_filter', message, { details: [{ field: 'filter', message }] });
}

/** The code points of `text`, counted up to `cap` at most (a long text is not walked to its end). */
function codePoints(text: string, cap: number): number {
  let n = 0;
  for (let i = 0; i < text.length && n < cap; i++, n++) {
    const c = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return n;
}

/** Parses each `field:value` filter; unknown fields, empty values and unknown types are invalid_filter. */
export function parseFilters(filters: readonly string[]): SearchFilter[] {
  return filters.map((filter): SearchFilter => {
    // Characters as the body's limits count them (code points): a value stored within its limit
    // can always be filtered on, whatever its script.
    if (filter.length > MAX_FILTER_LENGTH && codePoints(filter, MAX_FILTER_LENGTH + 1) > MAX_FILTER_LENGTH) {
      const start = Array.from(filter.slice(0, 80)).slice(0, 40).join('');
      throw invalidFilter(`${start}…`, `is longer than ${MAX_FILTER_LENGTH} characters`);
    }
    const colon = filter.indexOf(':');
    if (colon <= 0) throw invalidFilter(filter, 'is not field:value');
    const field = filter.slice(0, colon);
    const value = filter.slice(colon + 1);
    if (value === '') throw invalidFilter(filter, 'has an empty value');
    const name = field.toLowerCase();
    if (name === 'type') {
      if (!(DATA_TYPES as readonly string[]).includes(value)) {
        throw invalidFilter(filter, `must name a type: ${DATA_TYPES.join(', ')}`);
      }
      return { kind: 'type', value };
    }
    if (name === 'tag' || name === 'tags') return { kind: 'tag', value };
    if (name === 'status' || name === 'author') return { kind: 'metadata', key: name, value };
    if (name.startsWith('metadata.')) {
      // The key keeps its case: metadata keys are case-sensitive.
      const key = field.slice('metadata.'.length);
      if (key === '' || Array.from(key).length > MAX_METADATA_KEY) {
        throw invalidFilter(filter, `needs a metadata key of 1 to ${MAX_METADATA_KEY} characters`);
      }
      return { kind: 'metadata', key, value };
    }
    throw invalidFilter(filter, 'uses an unknown field (type, tag, tags, status, author, metadata.<key>)');
  });
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// A `+` offset sent unencoded in a query string arrives as a space; it is read as `+`.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2}):?(\d{2}))$/;
// Offsets can push an instant past the 4-digit years that sort correctly as text; clamp to them.
// Year 1, not 0: PostgreSQL has no year 0 (`0000-01-01` as timestamptz is an error, which was a
// 500), and nothing is stored before year 1 anyway.
const FIRST = new Date('0001-01-01T00:00:00.000Z').getTime();
const LAST = new Date('9999-12-31T23:59:59.999Z').getTime();

function utc(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number | null {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, ms);
  const ok =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    h < 24 &&
    mi < 60 &&
    s < 60;
  return ok ? date.getTime() : null;
}

/**
 * One bound: `at`, epoch milliseconds to compare stored instants with (a date means its first
 * (`from`) or last (`to`) instant UTC), and `exact`, the instant as sent to the nanosecond, to
 * compare the two bounds with.
 */
function parseBound(text: string, edge: 'from' | 'to'): { at: number; exact: bigint } | null {
  const d = DATE_ONLY.exec(text);
  if (d) {
    const day = utc(Number(d[1]), Number(d[2]), Number(d[3]));
    if (day === null) return null;
    return edge === 'from'
      ? { at: day, exact: BigInt(day) * 1_000_000n }
      : { at: day + 86_399_999, exact: BigInt(day + 86_399_999) * 1_000_000n + 999_999n };
  }
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const fraction = m[7] ?? '';
  const ms = Number(fraction.slice(0, 3).padEnd(3, '0'));
  const finer = fraction.slice(3).padEnd(6, '0');
  // Stored instants have millisecond precision; a finer `from` must not admit the millisecond before
  // it (a finer `to` is cut to its millisecond, which admits nothing after it).
  const local = utc(
    Number(m[1]),
    Number(m[2]),
    Number(m[3]),
    Number(m[4]),
    Number(m[5]),
    Number(m[6] ?? 0),
    0,
  );
  if (local === null) return null;
  let offset = 0;
  if (!m[8]) {
    const hours = Number(m[10]);
    const minutes = Number(m[11]);
    if (hours > 23 || minutes > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  const truncated = local + ms - offset;
  const rounded = edge === 'from' && finer !== '000000' ? truncated + 1 : truncated;
  return { at: rounded, exact: BigInt(truncated) * 1_000_000n + BigInt(finer) };
}

/** `from`/`to` as inclusive ISO instants; unparseable or reversed bounds are invalid_request. */
export function parseRange(from: string | undefined, to: string | undefined): { from?: string; to?: string } {
  const out: { from?: string; to?: string } = {};
  const bounds: Record<'from' | 'to', bigint | undefined> = { from: undefined, to: undefined };
  for (const [edge, text] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (text === undefined) continue;
    const bound = parseBound(text, edge);
    if (bound === null) {
      throw invalidField(edge, 'must be an ISO 8601 date-time with Z or an offset, or a date (YYYY-MM-DD)');
    }
    bounds[edge] = bound.exact;
    out[edge] = new Date(Math.min(LAST, Math.max(FIRST, bound.at))).toISOString();
  }
  // The bounds as sent are compared, before clamping (two reversed bounds beyond one end are still
  // refused) and before rounding (equal or ordered bounds within one millisecond are not: they
  // just leave no stored instant between them).
  if (bounds.from !== undefined && bounds.to !== undefined && bounds.from > bounds.to) {
    throw invalidField('from', 'must not be after to');
  }
  return out;
}
