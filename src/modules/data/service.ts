import type { AppContext } from '../../context.ts';
import type { IdempotencyClaim } from '../../db/commit-claim.ts';
import { recordEvent } from '../../events/outbox.ts';
import { invalidField, notFound } from '../../http/errors.ts';
import { newId } from '../../lib/ids.ts';
import { titleSortKey } from '../../lib/sort-key.ts';
import { isoAfter, isoNow } from '../../lib/time.ts';
import { indexDataObject, reindexDataObject, unindexDataObject } from '../../search/search-index.ts';
import { ObjectJsonCache, objectCacheOf } from './object-cache.ts';
import {
  type DataRow,
  type DataSort,
  deleteDataObject,
  findDataObject,
  findDataObjectJson,
  insertDataObject,
  listDataObjects,
  readDataVersion,
  type Serialized,
  updateDataObject,
} from './repo.ts';
import type { CreateDataInput, DataObjectOut, PatchDataInput } from './schemas.ts';

/** Row -> API shape. */
export function toDataObject(row: DataRow): DataObjectOut {
  return {
    id: row.id,
    title: row.title,
    type: row.type as DataObjectOut['type'],
    content: row.content,
    // Empty ones (what an object gets when created without them) need no parse.
    tags: row.tags === '[]' ? [] : JSON.parse(row.tags),
    metadata: row.metadata === '{}' ? {} : JSON.parse(row.metadata),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Blank to a reader: only white space (every Unicode White_Space character: JavaScript's `\s` leaves
 * out U+0085), control characters, invisible format characters (zero-width space, word joiner,
 * byte-order mark, soft hyphen), combining marks with nothing to combine with (U+034F, variation
 * selectors), and the fillers that render as nothing (Hangul fillers, the blank Braille pattern),
 * which String.prototype.trim does not all remove.
 */
const BLANK = /^[\s\p{White_Space}\p{Cc}\p{Cf}\p{M}\u115F\u1160\u3164\uFFA0\u2800]*$/u;
export const isBlank = (s: string) => BLANK.test(s);

/** Title not blank (decisions §5); no tag blank either, since no filter or search could name it. */
function checkText(input: { title?: string; tags?: string[] }) {
  if (input.title !== undefined && isBlank(input.title)) throw invalidField('title', 'must not be blank');
  const blank = input.tags?.findIndex(isBlank) ?? -1;
  if (blank >= 0) throw invalidField(`tags.${blank}`, 'must not be blank');
}

/** Tags keep their first occurrence's position; repeats are dropped (decisions §5). */
const dedupe = (tags: string[]) => [...new Set(tags)];

export async function createData(
  ctx: AppContext,
  accountId: string,
  input: CreateDataInput,
  claim?: IdempotencyClaim,
) {
  checkText(input);
  const now = isoNow(ctx.clock);
  const row: DataRow = {
    account_id: accountId,
    id: newId('data'),
    title: input.title,
    title_sort: titleSortKey(input.title),
    type: input.type,
    content: input.content ?? '',
    tags: JSON.stringify(dedupe(input.tags ?? [])),
    metadata: JSON.stringify(input.metadata ?? {}),
    created_at: now,
    updated_at: null,
  };
  await ctx.database.write(async (trx) => {
    await insertDataObject(trx, ctx.database.dialect, row);
    await indexDataObject(trx, ctx.database.dialect, row);
    await recordEvent(
      trx,
      ctx.database.dialect,
      accountId,
      'data.created',
      { id: row.id, title: row.title, type: row.type },
      now,
    );
  }, claim);
  return toDataObject(row);
}

/** The object; on SQLite already serialised as the API's JSON (`{ json }`). */
export async function getData(
  ctx: AppContext,
  accountId: string,
  id: string,
): Promise<DataObjectOut | Serialized> {
  const { db, dialect } = ctx.database;
  if (dialect === 'sqlite') {
    // The version first: an object read after it is at least as new as what the version says.
    const version = await readDataVersion(db, accountId);
    const cache = objectCacheOf(db);
    const key = ObjectJsonCache.key(accountId, id);
    if (version !== undefined) {
      const cached = cache.get(key, version);
      if (cached !== undefined) return { json: cached };
    }
    const json = await findDataObjectJson(db, accountId, id);
    if (json === undefined) throw notFound('data object', id);
    if (version !== undefined) cache.set(key, version, json);
    return { json };
  }
  const row = await findDataObject(db, dialect, accountId, id);
  if (!row) throw notFound('data object', id);
  return toDataObject(row);
}

export async function listData(
  ctx: AppContext,
  accountId: string,
  q: { sort: DataSort; order?: 'asc' | 'desc'; limit: number; offset: number },
) {
  const order = q.order ?? (q.sort === 'title' ? 'asc' : 'desc');
  return listDataObjects(ctx.database.db, ctx.database.dialect, accountId, {
    sort: q.sort,
    order,
    limit: q.limit,
    offset: q.offset,
  });
}

const PATCHABLE = ['title', 'type', 'content', 'tags', 'metadata'] as const;

/** Replaces the given fields whole; emits `data.updated` with `changed` only when something changed. */
export async function patchData(ctx: AppContext, accountId: string, id: string, input: PatchDataInput) {
  checkText(input);
  const { dialect } = ctx.database;
  return ctx.database.write(async (trx) => {
    const row = await findDataObject(trx, dialect, accountId, id, { forUpdate: true });
    if (!row) throw notFound('data object', id);
    const next: DataRow = { ...row };
    if (input.title !== undefined) {
      next.title = input.title;
      next.title_sort = titleSortKey(input.title);
    }
    if (input.type !== undefined) next.type = input.type;
    if (input.content !== undefined) next.content = input.content;
    if (input.tags !== undefined) next.tags = JSON.stringify(dedupe(input.tags));
    if (input.metadata !== undefined) next.metadata = JSON.stringify(input.metadata);
    const changed = PATCHABLE.filter((f) => next[f] !== row[f] && !sameJson(f, next[f], row[f]));
    if (changed.length === 0) return toDataObject(row);
    const now = isoAfter(ctx.clock, row.updated_at ?? row.created_at);
    next.updated_at = now;
    const { account_id: _a, id: _i, created_at: _c, ...patch } = next;
    await updateDataObject(trx, accountId, id, patch);
    await reindexDataObject(trx, dialect, row, next);
    await recordEvent(
      trx,
      ctx.database.dialect,
      accountId,
      'data.updated',
      { id, title: next.title, type: next.type, changed },
      now,
    );
    return toDataObject(next);
  });
}

/** Metadata objects equal up to key order count as unchanged. */
function sameJson(field: string, a: string, b: string): boolean {
  if (field !== 'metadata') return false;
  const x = JSON.parse(a) as Record<string, string>;
  const y = JSON.parse(b) as Record<string, string>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => y[k] === x[k]);
}

export async function deleteData(ctx: AppContext, accountId: string, id: string) {
  await ctx.database.write(async (trx) => {
    await unindexDataObject(trx, ctx.database.dialect, accountId, id);
    const gone = await deleteDataObject(trx, accountId, id);
    if (!gone) throw notFound('data object', id);
    const { created_at, updated_at, ...data } = gone;
    const at = isoAfter(ctx.clock, updated_at ?? created_at);
    await recordEvent(trx, ctx.database.dialect, accountId, 'data.deleted', data, at);
  });
}
