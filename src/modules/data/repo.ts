import { hotQuery } from '../../db/database.ts';
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

const selectOne = hotQuery<DataRow>(`select ${COLUMNS} from data_objects where account_id = ? and id = ?`);
const selectOneForUpdate = hotQuery<DataRow>(
  `select ${COLUMNS} from data_objects where account_id = ? and id = ? for update`,
);

/** One object of one account; `forUpdate` locks the row on PostgreSQL (SQLite serialises writers). */
export async function findDataObject(
  db: Db,
  dialect: Dialect,
  accountId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<DataRow | undefined> {
  const query = opts.forUpdate && dialect === 'postgres' ? selectOneForUpdate : selectOne;
  return (await query(db, dialect, [accountId, id]))[0];
}

const LIST_ORDERS = {
  date: { asc: 'created_at asc, id asc', desc: 'created_at desc, id desc' },
  title: { asc: 'title_sort asc, id asc', desc: 'title_sort desc, id desc' },
} as const;
// Kept exact by the triggers of migration 0006; coalesce answers 0 for an account with no rows yet.
const TOTAL = 'coalesce(sum(n), 0)';
const COUNTS = 'from data_object_counts where account_id = ?';
const countObjects = hotQuery<{ n: number | string }>(`select ${TOTAL} as n ${COUNTS}`);

type ListStatements = Record<
  DataSort,
  Record<'asc' | 'desc', ReturnType<typeof hotQuery<DataListRow & { total?: number | string }>>>
>;
const listStatements = (columns: string): ListStatements => {
  const page = (order: string) =>
    hotQuery<DataListRow & { total?: number | string }>(
      `select ${columns} from data_objects where account_id = ? order by ${order} limit ? offset ?`,
    );
  return {
    date: { asc: page(LIST_ORDERS.date.asc), desc: page(LIST_ORDERS.date.desc) },
    title: { asc: page(LIST_ORDERS.title.asc), desc: page(LIST_ORDERS.title.desc) },
  };
};
// SQLite: the page alone, the total from its own statement. PostgreSQL: the total rides on every row
// of the page (an uncorrelated subquery, one InitPlan), so a page is one round trip instead of two.
// On SQLite the combined statement measured slower than the two (docs/benchmarks.md).
const listPages = listStatements('id, title, type, created_at');
const listPagesWithTotal = listStatements(
  `(select ${TOTAL} ${COUNTS}) as total, id, title, type, created_at`,
);

export type DataListRow = Pick<DataRow, 'id' | 'title' | 'type' | 'created_at'>;

/** The account's object count, from the counts table (exact, not an estimate). */
export async function countDataObjects(db: Db, dialect: Dialect, accountId: string): Promise<number> {
  const [row] = await countObjects(db, dialect, [accountId]);
  return Number(row?.n ?? 0);
}

/** A page of list items plus the account's total; ties break by id so pages never overlap. */
export async function listDataObjects(
  db: Db,
  dialect: Dialect,
  accountId: string,
  opts: { sort: DataSort; order: 'asc' | 'desc'; limit: number; offset: number },
): Promise<{ rows: DataListRow[]; total: number }> {
  if (dialect === 'postgres') {
    const rows = await listPagesWithTotal[opts.sort][opts.order](db, dialect, [
      accountId,
      accountId,
      opts.limit,
      opts.offset,
    ]);
    // A page past the end has no row to carry the total: count on its own. The rows keep their
    // `total` column; the list item's response schema serialises only its own fields.
    const total = rows[0] ? Number(rows[0].total) : await countDataObjects(db, dialect, accountId);
    return { rows, total };
  }
  const [rows, total] = await Promise.all([
    listPages[opts.sort][opts.order](db, dialect, [accountId, opts.limit, opts.offset]),
    countDataObjects(db, dialect, accountId),
  ]);
  return { rows, total };
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
    .returning(['id', 'title', 'type'])
    .executeTakeFirst();
}
