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

const LIST_COLUMNS = 'id, title, type, created_at';
const listPages = {
  date: {
    asc: hotQuery<DataListRow>(
      `select ${LIST_COLUMNS} from data_objects where account_id = ? order by created_at asc, id asc limit ? offset ?`,
    ),
    desc: hotQuery<DataListRow>(
      `select ${LIST_COLUMNS} from data_objects where account_id = ? order by created_at desc, id desc limit ? offset ?`,
    ),
  },
  title: {
    asc: hotQuery<DataListRow>(
      `select ${LIST_COLUMNS} from data_objects where account_id = ? order by title_sort asc, id asc limit ? offset ?`,
    ),
    desc: hotQuery<DataListRow>(
      `select ${LIST_COLUMNS} from data_objects where account_id = ? order by title_sort desc, id desc limit ? offset ?`,
    ),
  },
};
// Kept exact by the triggers of migration 0006; coalesce answers 0 for an account with no rows yet.
const countObjects = hotQuery<{ n: number | string }>(
  'select coalesce(sum(n), 0) as n from data_object_counts where account_id = ?',
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
