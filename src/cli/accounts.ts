import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import { type Database, migrate, openDatabase } from '../db/database.ts';
import { isEmail } from '../lib/email.ts';
import { changePlan, createAccount, PLANS, type PlanName } from '../modules/accounts/service.ts';
import { UsageError } from './main.ts';

const isPlan = (p: string | undefined): p is PlanName => PLANS.includes(p as PlanName);

/** `ads accounts create|set-plan`. Its arguments are checked before the database is opened. */
export async function accountsCommand(config: Readonly<Config>, argv: string[]): Promise<number> {
  const run = parseAccountsCommand(argv);
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    return await run(database);
  } finally {
    await database.close();
  }
}

/** The command `argv` asks for, to run on an open database; a UsageError when it is malformed. */
function parseAccountsCommand(argv: string[]): (database: Database) => Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        'admin-email': { type: 'string' },
        plan: { type: 'string', default: 'free' },
        json: { type: 'boolean', default: false },
      },
    });
    const name = values.name?.trim();
    const adminEmail = values['admin-email'];
    const plan = values.plan;
    if (!name) throw new UsageError('--name is required');
    if (!adminEmail || !isEmail(adminEmail)) {
      throw new UsageError('--admin-email must be an email address the API takes (name@example.com)');
    }
    if (!isPlan(plan)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
    return async (database) => {
      const created = await createAccount(database, { name, adminEmail, plan });
      if (values.json) process.stdout.write(`${JSON.stringify(created)}\n`);
      else {
        process.stdout.write(
          `Created account ${created.account.id} (${created.account.name}, plan ${created.account.plan}).\n` +
            `Admin ${created.admin.email} is ${created.admin.id}.\n` +
            `Admin API key (shown once, keep it safe): ${created.api_key.key}\n`,
        );
      }
      return 0;
    };
  }
  if (sub === 'set-plan') {
    const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true });
    const [accountId, plan] = positionals;
    if (!accountId || positionals.length !== 2) throw new UsageError('accounts set-plan ACCOUNT_ID PLAN');
    if (!isPlan(plan)) throw new UsageError(`PLAN must be one of ${PLANS.join(', ')}`);
    return async (database) => {
      if (!(await changePlan(database, accountId, plan))) {
        process.stderr.write(`ads: no account ${accountId}\n`);
        return 1;
      }
      process.stdout.write(`Account ${accountId} is now on plan ${plan}.\n`);
      return 0;
    };
  }
  throw new UsageError(`Unknown accounts command: ${sub ?? '(none)'}`);
}
