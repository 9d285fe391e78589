import type { AccountsTable, Db } from '../../db/types.ts';

export async function insertAccount(db: Db, row: AccountsTable): Promise<void> {
  await db.insertInto('accounts').values(row).execute();
}

export async function findAccount(db: Db, accountId: string): Promise<AccountsTable | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
}

export async function setAccountPlan(db: Db, accountId: string, plan: string): Promise<boolean> {
  const res = await db.updateTable('accounts').set({ plan }).where('id', '=', accountId).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Whether any account exists (first start prints a ready key only on an empty database). */
export async function anyAccount(db: Db): Promise<boolean> {
  return (await db.selectFrom('accounts').select('id').limit(1).executeTakeFirst()) !== undefined;
}
