import { parseArgs } from 'node:util';
import { ConfigError, checkSettingPaths, loadConfig } from '../config.ts';
import { migrate, openDatabase, progressEvery } from '../db/database.ts';
import { setHeapGrowth } from '../lib/heap-growth.ts';
import { createLogger, flushStderrLogs } from '../lib/logger.ts';
import { reindexSearch } from '../search/reindex.ts';
import { accountsCommand } from './accounts.ts';
import { backupCommand } from './backup.ts';
import { keysCommand } from './keys.ts';
import { serveCommand } from './serve.ts';
import { workerCommand } from './worker.ts';

const USAGE = `Usage: ads <command>

Commands:
  serve                                   Serve the API (HTTPS) and run the background workers
  worker                                  Run the background workers (webhook deliveries, mail) alone
  migrate                                 Bring the database schema up to date
  reindex [--restart]                     Rewrite every object's search entry (beside a running server;
                                          resumes an interrupted run unless --restart)
  backup DIR                              Copy ADS_DATA_DIR to DIR, the SQLite database as a consistent snapshot
  accounts create --name N --admin-email E [--plan free|pro|enterprise] [--json]
  accounts set-plan ACCOUNT_ID PLAN
  keys create --user USER_ID --scopes read,write [--name N] [--json]

Settings come from ADS_* environment variables (see README). Logs go to stderr.`;

/** A usage mistake: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/** The commands that run long or rewrite search entries in batches. */
const HEAP_GROWTH_COMMANDS = new Set(['serve', 'worker', 'migrate', 'reindex']);

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    // Asked for, on stdout; a command missing is a usage mistake, on stderr like the others.
    (command ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return command ? 0 : 2;
  }
  const config = loadConfig(process.env);
  // What the settings name on disk, for every command (serve also checks its TLS pair): an
  // ADS_DATA_DIR that is a file, or cannot be entered, is one line naming it and exit 2.
  checkSettingPaths(config, { tls: false });
  const logger = createLogger(config.logLevel);
  // Before their first full collection (src/lib/heap-growth.ts). backup copies pages and peaked the
  // same either way; the account and key commands are short.
  if (HEAP_GROWTH_COMMANDS.has(command)) setHeapGrowth(config.heapGrowthPercent);
  switch (command) {
    case 'serve':
      parseArgs({ args: rest, options: {} });
      return serveCommand(config, logger);
    case 'worker':
      parseArgs({ args: rest, options: {} });
      return workerCommand(config, logger);
    case 'migrate': {
      parseArgs({ args: rest, options: {} });
      const database = openDatabase(config.database);
      try {
        let newer: string[] = [];
        const applied = await migrate(database, {
          onProgress: progressEvery((migration, entries) =>
            process.stderr.write(`${migration}: ${entries} search entries rewritten so far\n`),
          ),
          onNewerSchema: (names) => {
            newer = names;
          },
        });
        process.stdout.write(
          applied.length
            ? `Applied: ${applied.join(', ')}\n`
            : newer.length
              ? `Schema is newer than this release (${newer.join(', ')}): nothing to apply.\n`
              : 'Schema is up to date.\n',
        );
      } finally {
        await database.close();
      }
      return 0;
    }
    case 'reindex': {
      const { values } = parseArgs({ args: rest, options: { restart: { type: 'boolean' } } });
      const database = openDatabase(config.database);
      try {
        await migrate(database);
        let logged = Date.now();
        const { rewritten, resumed } = await reindexSearch(database, {
          restart: values.restart === true,
          onBatch: (n) => {
            if (Date.now() - logged < 5000) return;
            logged = Date.now();
            logger.info({ rewritten: n }, 'reindex progress');
          },
        });
        process.stdout.write(
          `Reindexed ${rewritten} objects${resumed ? ' (resumed an interrupted run)' : ''}.\n`,
        );
      } finally {
        await database.close();
      }
      return 0;
    }
    case 'backup':
      return backupCommand(config, rest);
    case 'accounts':
      return accountsCommand(config, rest);
    case 'keys':
      return keysCommand(config, rest);
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running; everything else exits when done.
    if (code !== -1) process.exit(code);
  },
  (err: unknown) => {
    // The message follows the log lines written before it.
    flushStderrLogs();
    if (err instanceof ConfigError) {
      process.stderr.write(`ads: ${err.message}\n`);
      process.exit(2);
    }
    const e = err as { code?: string; message?: string };
    if (err instanceof UsageError || e?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      process.stderr.write(`ads: ${e.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`ads: ${e?.message ?? String(err)}\n`);
    process.exit(1);
  },
);
