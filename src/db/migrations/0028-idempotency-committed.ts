import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `committed`: set to 1 in the transaction that makes a keyed request's change (src/db/commit-claim.ts),
 * so a run whose process stopped after its change committed but before its answer was stored is
 * never run again by a retry. A new column with a constant default: no table rewrite on either
 * database, and additive (the previous release's inserts get 0). Idempotent, like the migrations
 * after 0020 (a test replays them): the column is added only when missing.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') {
    await sql`alter table idempotency_keys add column if not exists committed integer not null default 0`.execute(
      db,
    );
    return;
  }
  const { rows } = await sql<{
    name: string;
  }>`select name from pragma_table_info('idempotency_keys')`.execute(db);
  if (rows.some((r) => r.name === 'committed')) return;
  await sql`alter table idempotency_keys add column committed integer not null default 0`.execute(db);
}
