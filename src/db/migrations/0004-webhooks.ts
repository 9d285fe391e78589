import type { Kysely } from 'kysely';
import type { Dialect } from '../types.ts';

/** Filled in by the feature that owns this migration. */
export async function up(_db: Kysely<unknown>, _dialect: Dialect): Promise<void> {}
