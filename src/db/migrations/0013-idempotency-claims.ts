import type { Kysely } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Each run of an idempotent request holds its key under a token of its own (`claim`), so a run
 * that outlived its claim (its process crashed, another run took the key over) can no longer
 * write or release what the new run holds. Rows from before have none (null).
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('claim', 'text').execute();
}
