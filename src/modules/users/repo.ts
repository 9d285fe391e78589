import type { Db, UsersTable } from '../../db/types.ts';

export async function insertUser(db: Db, row: UsersTable): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function findUser(db: Db, accountId: string, userId: string): Promise<UsersTable | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', userId)
    .executeTakeFirst();
}

/**
 * findUser, and on PostgreSQL the row stays locked until the transaction ends, so concurrent
 * changes to one user (two invitation re-sends) run one after the other. SQLite's single writer
 * already serialises them.
 */
export async function findUserForUpdate(
  db: Db,
  dialect: string,
  accountId: string,
  userId: string,
): Promise<UsersTable | undefined> {
  const query = db
    .selectFrom('users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', userId);
  return (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/** Operator-only lookup across accounts (`ads keys create --user`); API code always passes accountId. */
export async function findUserForOperator(db: Db, userId: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
}

/** Members of an account, oldest first (ties by id), with the account's total. */
export async function listUsers(db: Db, accountId: string, page: { limit: number; offset: number }) {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('users')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/**
 * Serialises changes to an account's admins: on PostgreSQL a row lock on the account, held to the
 * end of the transaction (SQLite already runs one writer at a time). FOR NO KEY UPDATE, not FOR
 * UPDATE: it excludes its own kind, but not the share lock an insert of a row referencing the
 * account takes for its foreign key. A re-send or acceptance that holds the user's row and then
 * writes invitation, mail or key rows would otherwise deadlock with a role change or removal that
 * holds this lock and waits for that user's row.
 */
export async function lockAccountAdmins(db: Db, accountId: string, dialect: string): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
}

/** Active admins of an account, excluding one user. */
export async function countOtherActiveAdmins(
  db: Db,
  accountId: string,
  exceptUserId: string,
): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('role', '=', 'admin')
    .where('status', '=', 'active')
    .where('id', '!=', exceptUserId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function updateUser(
  db: Db,
  accountId: string,
  userId: string,
  patch: Partial<Pick<UsersTable, 'role' | 'status' | 'created_at' | 'updated_at'>>,
): Promise<void> {
  await db
    .updateTable('users')
    .set(patch)
    .where('account_id', '=', accountId)
    .where('id', '=', userId)
    .execute();
}

/** An invited user becomes active; false when they were not (still) invited, so a race has one winner. */
export async function activateInvitedUser(
  db: Db,
  accountId: string,
  userId: string,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ status: 'active', created_at: now, updated_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', userId)
    .where('status', '=', 'invited')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteUser(db: Db, accountId: string, userId: string): Promise<void> {
  await db.deleteFrom('users').where('account_id', '=', accountId).where('id', '=', userId).execute();
}
