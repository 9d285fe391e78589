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

/** Operator-only lookup across accounts (`ads keys create --user`); API code always passes accountId. */
export async function findUserForOperator(db: Db, userId: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
}
