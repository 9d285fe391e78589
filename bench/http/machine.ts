/** Where the figures come from: the machine line (CPU, memory, OS, Node and database versions) and CPU steal. */
import fs from 'node:fs';
import os from 'node:os';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

/** Versions of the two databases as this run used them (PostgreSQL only when `pgUrl` is given). */
async function databaseVersions(pgUrl: string | undefined): Promise<string[]> {
  const mem = new BetterSqlite3(':memory:');
  const sqlite = (mem.prepare('select sqlite_version() as v').get() as { v: string }).v;
  mem.close();
  const out = [`SQLite ${sqlite} (better-sqlite3, WAL, synchronous=FULL)`];
  if (pgUrl) {
    const client = new pg.Client({ connectionString: pgUrl });
    try {
      await client.connect();
      const { rows } = await client.query<{ v: string }>("select current_setting('server_version') as v");
      out.push(`PostgreSQL ${rows[0]?.v.split(' ')[0] ?? '?'} on the same machine`);
    } catch {
      out.push('PostgreSQL (version unavailable)');
    } finally {
      await client.end().catch(() => {});
    }
  }
  return out;
}

/** E.g. "2 × AMD EPYC, 23.5 GiB RAM, Linux 6.1 x64, Node v20.20.2, SQLite 3.50 …; 2025-06-01". */
export async function describeMachine(pgUrl: string | undefined, date = new Date()): Promise<string> {
  const cpus = os.cpus();
  const model = (cpus[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim();
  const gib = (os.totalmem() / 2 ** 30).toFixed(1);
  const parts = [
    `${cpus.length} × ${model}`,
    `${gib} GiB RAM`,
    `${os.type()} ${os.release()} ${os.arch()}`,
    `Node ${process.version}`,
    ...(await databaseVersions(pgUrl)),
  ];
  return `${parts.join(', ')}; load generator, server and database share the machine. Measured ${date
    .toISOString()
    .slice(0, 16)
    .replace('T', ' ')} UTC.`;
}

/** The machine's CPU time so far (all CPUs, in clock ticks), and how much of it the hypervisor took. */
export interface CpuTimes {
  steal: number;
  total: number;
}

/**
 * From the `cpu` line of /proc/stat; undefined where there is none (not Linux). On a virtual
 * machine, `steal` is time the vCPUs were ready to run while the host ran something else: load the
 * figures cannot show, since none of the benchmark's processes is charged for it.
 */
export function cpuTimes(): CpuTimes | undefined {
  let line: string | undefined;
  try {
    line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  } catch {
    return undefined;
  }
  if (!line?.startsWith('cpu ')) return undefined;
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((x) => !Number.isFinite(x))) return undefined;
  return { steal: f[7]!, total: f.reduce((a, b) => a + b, 0) };
}

/** The share of CPU time stolen between two readings, in %; undefined without both. */
export function stealPercent(from: CpuTimes | undefined, to: CpuTimes | undefined): number | undefined {
  if (!from || !to || to.total <= from.total) return undefined;
  return (100 * (to.steal - from.steal)) / (to.total - from.total);
}
