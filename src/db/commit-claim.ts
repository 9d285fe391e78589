import { sql } from 'kysely';
import { AppError } from '../http/errors.ts';
import type { Db } from './types.ts';

/** A keyed POST's hold on its Idempotency-Key (src/http/idempotency.ts: `request.idempotencyKey`). */
export interface IdempotencyClaim {
  accountId: string;
  key: string;
  claim: string;
}

/**
 * Marks, in the transaction that makes the request's change, its Idempotency-Key claim
 * committed (column `committed`, migration 0028): the change and the mark commit together or not at all. The answer is stored later,
 * once the response is built; a crash in between left the claim `running`, and a retry, once the
 * run was given up for abandoned, ran the request a second time (a second object, a second
 * event). A committed claim is never run again (docs/api.md, "Idempotency"). A no-op without a
 * claim (no Idempotency-Key).
 */
export async function markClaimCommitted(trx: Db, held: IdempotencyClaim | undefined): Promise<void> {
  if (!held) return;
  const res = await sql`update idempotency_keys set committed = 1
    where account_id = ${held.accountId} and key = ${held.key} and claim = ${held.claim} and status = 'running'`.execute(
    trx,
  );
  // The claim is no longer this run's: a retry took the key over after giving this (slow) run up
  // for abandoned, and may already have made the change. Throwing rolls this run's change back.
  if (Number(res.numAffectedRows ?? 0) === 0) {
    throw new AppError(
      'idempotency_conflict',
      'A retry with this Idempotency-Key took it over while this request was running; this request changed nothing.',
    );
  }
}
