/** One line describing where the figures come from: CPU, memory, OS, Node and database versions. */
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
