import type { Kysely } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `committed`: set to 1 in the transaction that makes a keyed request's change (src/db/commit-claim.ts),
 * so a run whose process stopped after its change committed but before its answer was stored is
 * never run again by a retry. A new column with a constant default: no table rewrite on either
 * database; rows from before read 0 (their runs are done, or are treated as before).
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .alterTable('idempotency_keys')
    .addColumn('committed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
