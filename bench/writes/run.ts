/**
 * The data write path in process, group commit against one transaction per write: `createData`
 * (insert, search index, outbox event; 1 KB bodies from the HTTP harness's corpus) driven by 1, 10
 * and 64 concurrent callers, then `patchData` (the content replaced with another 1 KB body) and
 * `deleteData` of objects those creates indexed, by 10 callers. Both modes run in the same process
 * on the same database, alternating per round, so the comparison is a same-run baseline; no HTTP
 * (bench/http measures that). Figures: objects/s (wall clock) and CPU ms of this process per object
 * (on PostgreSQL the server's own CPU is not in it). PostgreSQL has no group commit (each write has
 * its own connection), so only its plain rows are measured, as a reference.
 *
 *   npm run bench -- writes [--db sqlite|postgres|both] [--objects 2000] [--rounds 3] [--smoke]
 *     [--pg-url ADMIN_URL] [--no-write]
 *
 * Every call counted completed without an error (one that throws stops the run), so objects/s is
 * successful calls per second. `--db` and writing docs/benchmarks.md follow bench/options.ts.
 */
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import type { CreateDataInput } from '../../src/modules/data/schemas.ts';
import { createData, deleteData, patchData } from '../../src/modules/data/service.ts';
import { benchContext } from '../context.ts';
import { describeMachine } from '../http/machine.ts';
import { chooseDatabases, parseBenchArgs, writesDocs } from '../options.ts';
import { writeBenchSection } from '../report.ts';
import { type BenchDialect, createTarget } from '../seed/target.ts';
import { objectGenerator } from '../seed/words.ts';

const args = parseBenchArgs('writes');
const smoke = args.boolean('smoke');
const objects = args.number('objects', smoke ? 200 : 2000);
const rounds = args.number('rounds', smoke ? 1 : 3);
const { dbs, pgUrl } = chooseDatabases(args);
const write = writesDocs(args);
const CONCURRENCY = [1, 10, 64];
/** Callers of the patch and delete legs. */
const UPDATERS = 10;

type Mode = 'per write' | 'group commit';
type Op = 'create' | 'patch' | 'delete';
interface Leg {
  db: string;
  op: Op;
  mode: Mode;
  concurrency: number;
  perSecond: number[];
  cpuMs: number[];
}

/** `n` calls of `work(i)` by `concurrency` callers; objects/s and CPU ms per object. */
async function leg(n: number, concurrency: number, work: (i: number) => Promise<unknown>) {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: n / seconds, cpuMs: (cpu.user + cpu.system) / 1000 / n };
}

/**
 * How many segments (b-trees) the SQLite FTS5 index has: a secure delete looks each word of the
 * removed entry up in every one. Rowids of search_fts_data above 10 are pages, segment id << 37.
 */
async function ftsSegments(db: AppContext['database']['db']): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(DISTINCT id >> 37) AS n FROM search_fts_data WHERE id > 10`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

async function measure(db: BenchDialect): Promise<Leg[]> {
  const target = await createTarget(db, pgUrl);
  const config = loadConfig({
    ADS_DATA_DIR: target.dataDir,
    ADS_DATABASE_URL: target.databaseUrl,
    ADS_LOG_LEVEL: 'silent',
  });
  const ctx = await benchContext(config);
  const grouped = ctx.database;
  // One transaction per write: what `write` was before group commit.
  const plain: typeof grouped = { ...grouped, write: (fn) => grouped.db.transaction().execute(fn) };
  const modes: Mode[] = db === 'sqlite' ? ['per write', 'group commit'] : ['per write'];
  const shapes: [Op, number][] = [
    ...CONCURRENCY.map((c): [Op, number] => ['create', c]),
    ['patch', UPDATERS],
    ['delete', UPDATERS],
  ];
  const legs: Leg[] = shapes.flatMap(([op, concurrency]) =>
    modes.map((mode) => ({ db, op, mode, concurrency, perSecond: [], cpuMs: [] })),
  );
  try {
    const account = await createAccount(grouped, {
      name: 'Writes',
      adminEmail: 'w@x.test',
      plan: 'enterprise',
    });
    const accountId = account.account.id;
    const gen = objectGenerator(7, 1024, 1024);
    const bodies = Array.from({ length: 256 }, () => gen() as CreateDataInput);
    // Objects created and not yet deleted, oldest first: the patch and delete legs take theirs
    // from the front, so each patches or deletes objects indexed by the creates before it.
    const live: string[] = [];
    let made = 0;
    let patched = 0;
    const work = (ctxOf: AppContext, op: Op, from: string[]) => (i: number) => {
      if (op === 'create') {
        return createData(ctxOf, accountId, bodies[made++ % bodies.length]!).then((o) => live.push(o.id));
      }
      if (op === 'patch') {
        const content = bodies[(patched++ * 7 + 3) % bodies.length]!.content;
        return patchData(ctxOf, accountId, from[i]!, { content });
      }
      return deleteData(ctxOf, accountId, from[i]!);
    };
    // Warm-up: statements prepared, code optimised.
    const warm = Math.min(300, objects);
    await leg(warm, 10, work({ ...ctx, database: grouped }, 'create', []));
    await leg(warm, 10, work({ ...ctx, database: grouped }, 'patch', live.slice(0, warm)));
    await leg(warm, 10, work({ ...ctx, database: grouped }, 'delete', live.splice(0, warm)));
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? modes : [...modes].reverse();
      for (const [op, concurrency] of shapes) {
        for (const mode of order) {
          const database = mode === 'group commit' ? grouped : plain;
          // Patches take the oldest live objects; deletes remove them.
          const from =
            op === 'delete' ? live.splice(0, objects) : op === 'patch' ? live.slice(0, objects) : [];
          const r = await leg(objects, concurrency, work({ ...ctx, database }, op, from));
          const l = legs.find((x) => x.op === op && x.mode === mode && x.concurrency === concurrency)!;
          l.perSecond.push(r.perSecond);
          l.cpuMs.push(r.cpuMs);
          const segments = db === 'sqlite' ? `, ${await ftsSegments(grouped.db)} FTS5 segments` : '';
          console.warn(
            `${db} ${op.padEnd(6)} ${mode.padEnd(12)} ${String(concurrency).padStart(2)} callers: ${r.perSecond.toFixed(0)} objects/s, ${r.cpuMs.toFixed(3)} CPU ms/object${segments}`,
          );
        }
      }
    }
  } finally {
    await grouped.close();
    await target.drop();
  }
  return legs;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const all: Leg[] = [];
for (const db of dbs) all.push(...(await measure(db)));

const rows = all.map((l) => {
  const base = all.find(
    (b) => b.db === l.db && b.op === l.op && b.mode === 'per write' && b.concurrency === l.concurrency,
  )!;
  const ratio = median(l.perSecond) / median(base.perSecond);
  return `| ${l.db} | ${l.op} | ${l.mode} | ${l.concurrency} | ${Math.round(median(l.perSecond)).toLocaleString('en')} | ${median(l.cpuMs).toFixed(2)} | ${l.mode === 'per write' ? '–' : `${ratio.toFixed(1)}×`} |`;
});
const body = [
  'Produced by `npm run bench -- writes` (`bench/writes/run.ts`). In process, no HTTP: `createData`',
  '(the object insert, its search-index entry and its outbox event, in one transaction; 1 KB bodies',
  "from the HTTP harness's corpus), then `patchData` (content replaced with another 1 KB body: the old",
  'index entry out, the new one in) and `deleteData` of the oldest objects those creates indexed.',
  '*Per write*: one transaction and COMMIT per call, as before group commit; *group commit*: what',
  '`POST`, `PATCH` and `DELETE /data` do on SQLite (`src/db/group-commit.ts`). The two alternate in',
  `each of ${rounds} rounds on one database (${objects.toLocaleString('en')} calls per leg, so the database grows`,
  'through the run); medians over rounds. CPU is this process only (on PostgreSQL the',
  "server's CPU is not in it). SQLite WAL with `synchronous=FULL` throughout.",
  "SQLite's `PATCH` and `DELETE` rows depend on how many FTS5 segments the legs before them left",
  '(printed per leg on stderr) and on which mode ran first in a round: a leg after another that',
  'wrote many segments pays for them, so compare them within a round rather than across runs;',
  '"Notes: PATCH and DELETE of indexed objects" (HTTP) says where their time goes.',
  '',
  `Machine: ${(await describeMachine(dbs.includes('postgres') ? pgUrl : undefined)).replace('load generator, server and database share', 'callers and database share')}`,
  '',
  '| db | call | mode | concurrent callers | objects/s | CPU ms per object | vs per write |',
  '|---|---|---|--:|--:|--:|--:|',
  ...rows,
].join('\n');
console.warn(`\n${body}`);
if (write) writeBenchSection('Writes', body);
