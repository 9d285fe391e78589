import pg from 'pg';

/**
 * Runs `step` once, just before the pg client sends the next statement whose text matches `match`
 * (the statement then goes out as usual, after the step's promise settles). For tests that need
 * another transaction to happen at an exact point of one under test; PostgreSQL only, as SQLite
 * does not go through the pg client. Patches `pg.Client.prototype.query` once per test process.
 */
export function stepInBefore(match: RegExp, step: () => unknown): void {
  pending.push({ match, step });
}

const pending: { match: RegExp; step: () => unknown }[] = [];
const query = pg.Client.prototype.query;
pg.Client.prototype.query = async function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : first?.text;
  const at = typeof text === 'string' ? pending.findIndex((p) => p.match.test(text)) : -1;
  if (at >= 0) {
    const step = pending.splice(at, 1)[0]!.step;
    await step();
  }
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;
