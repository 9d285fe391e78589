import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import { migrate, openDatabase } from '../db/database.ts';
import { AppError } from '../http/errors.ts';
import { systemClock } from '../lib/time.ts';
import { SCOPES, type Scope } from '../modules/api-keys/scopes.ts';
import { issueKey } from '../modules/api-keys/service.ts';
import { findUserForOperator } from '../modules/users/repo.ts';
import { UsageError } from './main.ts';

/** `ads keys create --user USR --scopes read,write [--name N] [--json]`. */
export async function keysCommand(config: Readonly<Config>, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'create') throw new UsageError(`Unknown keys command: ${sub ?? '(none)'}`);
  const { values } = parseArgs({
    args: rest,
    options: {
      user: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (!values.user) throw new UsageError('--user is required');
  // As POST /api-keys takes it.
  if (values.name !== undefined && !(values.name.length >= 1 && [...values.name].length <= 100)) {
    throw new UsageError('--name must be 1 to 100 characters');
  }
  const scopes = (values.scopes ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes.filter((s) => !SCOPES.includes(s as Scope));
  if (scopes.length === 0 || unknown.length) {
    throw new UsageError(
      `--scopes must list some of ${SCOPES.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`,
    );
  }
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    const user = await findUserForOperator(database.db, values.user);
    if (!user) {
      process.stderr.write(`ads: no user ${values.user}\n`);
      return 1;
    }
    // Only an active user's keys authenticate: a key made now would be refused until they accept.
    if (user.status !== 'active') {
      process.stderr.write(
        `ads: user ${values.user} has not accepted their invitation yet; their first key comes with it\n`,
      );
      return 1;
    }
    const key = await issueKey({ database, clock: systemClock }, user.account_id, user.id, {
      name: values.name,
      scopes: [...new Set(scopes)],
    }).catch((err: unknown) => {
      if (err instanceof AppError) throw new UsageError(err.message);
      throw err;
    });
    if (values.json) process.stdout.write(`${JSON.stringify({ ...key, account_id: user.account_id })}\n`);
    else
      process.stdout.write(
        `Created key ${key.id} (${key.scopes.join(', ')}) for ${user.email}: ${key.key}\n`,
      );
    return 0;
  } finally {
    await database.close();
  }
}
