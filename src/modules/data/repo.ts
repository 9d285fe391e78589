import type { DataObjectsTable, Db, Dialect } from '../../db/types.ts';

export type DataRow = DataObjectsTable;
export type DataSort = 'date' | 'title';

export async function insertDataObject(db: Db, row: DataRow): Promise<void> {
  await db.insertInto('data_objects').values(row).execute();
}

/** One object of one account; `forUpdate` locks the row on PostgreSQL (SQLite serialises writers). */
export async function findDataObject(
  db: Db,
  accountId: string,
  id: string,
  opts: { forUpdate?: Dialect } = {},
): Promise<DataRow | undefined> {
  let q = db.selectFrom('data_objects').selectAll().where('account_id', '=', accountId).where('id', '=', id);
  if (opts.forUpdate === 'postgres') q = q.forUpdate();
  return q.executeTakeFirst();
}

/** A page of list items plus the account's total; ties break by id so pages never overlap. */
export async function listDataObjects(
  db: Db,
  accountId: string,
  opts: { sort: DataSort; order: 'asc' | 'desc'; limit: number; offset: number },
) {
  const column = opts.sort === 'title' ? 'title_sort' : 'created_at';
  const [rows, count] = await Promise.all([
    db
      .selectFrom('data_objects')
      .select(['id', 'title', 'type', 'created_at'])
      .where('account_id', '=', accountId)
      .orderBy(column, opts.order)
      .orderBy('id', opts.order)
      .limit(opts.limit)
      .offset(opts.offset)
      .execute(),
    db
      .selectFrom('data_objects')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
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
