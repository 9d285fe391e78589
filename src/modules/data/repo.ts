import { hotFirst, hotQuery, hotValue } from '../../db/database.ts';
import type { DataObjectsTable, Db, Dialect } from '../../db/types.ts';

export type DataRow = DataObjectsTable;
export type DataSort = 'date' | 'title';

const COLUMNS = 'account_id, id, title, title_sort, type, content, tags, metadata, created_at, updated_at';
const insertOne = hotQuery(`insert into data_objects (${COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);

export async function insertDataObject(db: Db, dialect: Dialect, row: DataRow): Promise<void> {
  await insertOne(db, dialect, [
    row.account_id,
    row.id,
    row.title,
    row.title_sort,
    row.type,
    row.content,
    row.tags,
    row.metadata,
    row.created_at,
    row.updated_at,
  ]);
}

const selectOne = hotFirst<DataRow>(`select ${COLUMNS} from data_objects where account_id = ? and id = ?`);
const selectOneForUpdate = hotFirst<DataRow>(
  `select ${COLUMNS} from data_objects where account_id = ? and id = ? for update`,
);

// The API shape of one object, serialised by SQLite's JSON functions (tags and metadata are stored
// as JSON text, which json() inserts as JSON): about half the time of reading the row, parsing its
// JSON columns and serialising the object (docs/benchmarks.md).
const selectOneJson = hotValue<string>(
  `select json_object('id', id, 'title', title, 'type', type, 'content', content, 'tags', json(tags), 'metadata', json(metadata), 'created_at', created_at, 'updated_at', updated_at) as json from data_objects where account_id = ? and id = ?`,
);

const dataVersion = hotValue<number>('select v from data_versions where account_id = ?');

/**
 * The account's data version (SQLite only, migration 0029): raised by every create, change or delete
 * of one of its objects. Undefined when the account has no row yet.
 */
export function readDataVersion(db: Db, accountId: string): Promise<number | undefined> {
  return dataVersion(db, 'sqlite', [accountId]);
}

/** One object of one account as the API's JSON (SQLite only), or undefined. */
export function findDataObjectJson(db: Db, accountId: string, id: string): Promise<string | undefined> {
  return selectOneJson(db, 'sqlite', [accountId, id]);
}

/** One object of one account; `forUpdate` locks the row on PostgreSQL (SQLite serialises writers). */
export function findDataObject(
  db: Db,
  dialect: Dialect,
  accountId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<DataRow | undefined> {
  const query = opts.forUpdate && dialect === 'postgres' ? selectOneForUpdate : selectOne;
  return query(db, dialect, [accountId, id]);
}

const LIST_ORDERS = {
  date: { asc: 'created_at asc, id asc', desc: 'created_at desc, id desc' },
  title: { asc: 'title_sort asc, id asc', desc: 'title_sort desc, id desc' },
} as const;
// Kept exact by the triggers of migration 0006; coalesce answers 0 for an account with no rows yet.
const TOTAL = 'coalesce(sum(n), 0)';
const COUNTS = 'from data_object_counts where account_id = ?';
const countObjects = hotValue<number | string>(`select ${TOTAL} as n ${COUNTS}`);

type ListStatements<Q> = Record<DataSort, Record<'asc' | 'desc', Q>>;
const listStatements = <Q>(hot: (text: string) => Q, page: (order: string) => string): ListStatements<Q> => {
  const of = (order: string) => hot(page(order));
  return {
    date: { asc: of(LIST_ORDERS.date.asc), desc: of(LIST_ORDERS.date.desc) },
    title: { asc: of(LIST_ORDERS.title.asc), desc: of(LIST_ORDERS.title.desc) },
  };
};
// PostgreSQL: the total rides on every row of the page (an uncorrelated subquery, one InitPlan), so
// a page is one round trip instead of two; a page past the end counts on its own.
const listPagesWithTotal = listStatements(
  hotQuery<DataListRow & { total: number | string }>,
  (order) =>
    `select (select ${TOTAL} ${COUNTS}) as total, id, title, type, created_at from data_objects where account_id = ? order by ${order} limit ? offset ?`,
);
// SQLite: one row with the total and the page already serialised by SQLite's JSON functions (their
// escaping is JSON.stringify's: test/data/data-list.test.ts), which the route puts into the answer
// as is. Against the page's rows plus a count statement and the response serializer, this takes
// about a third of the time (docs/benchmarks.md). `json_group_array` takes the rows in the order the
// ordered subquery (a co-routine) yields them; the list tests pin that order for every sort.
// `limit +?`, not `limit ?`: SQLite compiles a bare LIMIT parameter's value into the program and
// so recompiles the statement every time the parameter is bound; `+?` keeps it a parameter. The
// plan is the same index walk (the index matches the ORDER BY, so there is no sort to size).
const pageJsonSql = (order: string) =>
  `select (select ${TOTAL} ${COUNTS}) as total, (select json_group_array(json_object('id', id, 'title', title, 'type', type, 'created_at', created_at)) from (select id, title, type, created_at from data_objects where account_id = ? order by ${order} limit +? offset ?)) as items`;
const listPagesJson = listStatements(hotFirst<{ total: number; items: string }>, pageJsonSql);
/** The SQLite list statement (parameters: account id twice, limit, offset), for tests. */
export const sqliteListSql = (sort: DataSort, order: 'asc' | 'desc') => pageJsonSql(LIST_ORDERS[sort][order]);

export type DataListRow = Pick<DataRow, 'id' | 'title' | 'type' | 'created_at'>;

/** The account's object count, from the counts table (exact, not an estimate). */
export async function countDataObjects(db: Db, dialect: Dialect, accountId: string): Promise<number> {
  return Number((await countObjects(db, dialect, [accountId])) ?? 0);
}

/** JSON the database has already written (an object, or a page as an array), sent as is. */
export interface Serialized {
  json: string;
}

/**
 * A page of list items plus the account's total; ties break by id so pages never overlap. SQLite
 * answers the page as a JSON array, PostgreSQL as rows.
 */
export async function listDataObjects(
  db: Db,
  dialect: Dialect,
  accountId: string,
  opts: { sort: DataSort; order: 'asc' | 'desc'; limit: number; offset: number },
): Promise<{ items: DataListRow[] | Serialized; total: number }> {
  // A page past the end is known to be empty from the total alone; without this check the page
  // statement would still walk the account's whole list to skip `offset` rows (hundreds of ms at
  // 200,000 objects on PostgreSQL with sort=title), a cost any read key could ask for at will.
  // Page 1 skips the check: it walks no further than its own rows.
  if (opts.offset > 0) {
    const total = await countDataObjects(db, dialect, accountId);
    if (opts.offset >= total) return { items: dialect === 'postgres' ? [] : { json: '[]' }, total };
  }
  if (dialect === 'postgres') {
    const rows = await listPagesWithTotal[opts.sort][opts.order](db, dialect, [
      accountId,
      accountId,
      opts.limit,
      opts.offset,
    ]);
    // The rows keep their `total` column; the list item's response schema serialises only its own fields.
    const total = rows[0] ? Number(rows[0].total) : await countDataObjects(db, dialect, accountId);
    return { items: rows, total };
  }
  const row = await listPagesJson[opts.sort][opts.order](db, dialect, [
    accountId,
    accountId,
    opts.limit,
    opts.offset,
  ]);
  return { items: { json: row?.items ?? '[]' }, total: Number(row?.total ?? 0) };
}

export async function updateDataObject(
  db: Db,
  accountId: string,
  id: string,
  patch: Partial<Omit<DataRow, 'account_id' | 'id' | 'created_at'>>,
): Promise<void> {
  await db
    .updateTable('data_objects')
    .set(patch)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .execute();
}

/** Deletes and returns what the `data.deleted` event needs, or undefined when nothing was there. */
export async function deleteDataObject(db: Db, accountId: string, id: string) {
  return db
    .deleteFrom('data_objects')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returning(['id', 'title', 'type', 'created_at', 'updated_at'])
    .executeTakeFirst();
}

/** The tags and metadata (JSON as stored) of the account's objects among `ids`, by id. */
export async function findTagsAndMetadata(
  db: Db,
  accountId: string,
  ids: readonly string[],
): Promise<Map<string, { tags: string; metadata: string }>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('data_objects')
    .select(['id', 'tags', 'metadata'])
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, { tags: r.tags, metadata: r.metadata }]));
}
