import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { it } from 'node:test';
import { sql } from 'kysely';
import { describeEachDatabase, type Harness } from '../helpers/harness.ts';

/**
 * Bookkeeping that holds no account's data: Kysely's migration tables, search_refold_progress
 * (migration 0015), SQLite's one-row auth_epoch counter (migration 0021), its list of trigram
 * offsets 1..126 (migration 0022) and the names of migrations that break earlier releases
 * (schema_breaks, recordSchemaBreak; first by 0025).
 */
const FRAMEWORK_TABLES = new Set([
  'kysely_migration',
  'kysely_migration_lock',
  'search_refold_progress',
  'auth_epoch',
  'search_trigram_offsets',
  'schema_breaks',
]);

/**
 * Indexes that may not lead with account_id, each with the reason (docs/deployment.md "Ready for
 * Citus" and the migrations' comments). Anything else must lead with account_id.
 */
const INDEX_EXCEPTIONS: Record<string, { table: string; why: string }> = {
  api_keys_hash_uq: { table: 'api_keys', why: 'the bearer key arrives without an account' },
  invitations_token_uq: { table: 'invitations', why: 'the invitation token arrives without an account' },
  mail_outbox_due_idx: { table: 'mail_outbox', why: 'the mail worker scans due mail of all accounts' },
  webhook_deliveries_due_idx: {
    table: 'webhook_deliveries',
    why: 'delivery workers scan due deliveries of all accounts',
  },
  sqlite_autoindex_search_vocab_trigrams_1: {
    table: 'search_vocab_trigrams',
    why: "the key of a WITHOUT ROWID table, led by the account's search_accounts.seq (see PK_EXCEPTIONS)",
  },
};

/**
 * Tables whose primary key may be something else, on one dialect only, with the reason. Each must
 * still carry a unique index led by account_id, or lead its key with `accountKey`, a column that
 * stands for the account one to one.
 */
const PK_EXCEPTIONS: Record<string, { dialect: 'sqlite' | 'postgres'; why: string; accountKey?: string }> = {
  search_documents: { dialect: 'sqlite', why: 'FTS5 rows are addressed by an integer rowid' },
  search_vocab: {
    dialect: 'sqlite',
    why: 'its trigram rows (search_vocab_trigrams) name a word by its integer id',
  },
  search_vocab_trigrams: {
    dialect: 'sqlite',
    accountKey: 'account_seq',
    why: "millions of rows of a few bytes each: the account's search_accounts.seq (an integer) leads them, not its 30-character id",
  },
  search_accounts: {
    dialect: 'sqlite',
    why: "allocates each account's FTS5 rowid range (AUTOINCREMENT seq); account_id is UNIQUE",
  },
};

interface Schema {
  /** Primary-key columns in key order, per table. */
  primaryKeys: Map<string, string[]>;
  /** Every index (including those behind PRIMARY KEY and UNIQUE) with its first column. */
  indexes: { name: string; table: string; unique: boolean; first: string | null }[];
}

async function sqliteSchema(h: Harness): Promise<Schema> {
  const db = h.database.db;
  const objects = (
    await sql<{ type: string; name: string; tbl_name: string; sql: string | null }>`
      select type, name, tbl_name, sql from sqlite_master where name not like 'sqlite_stat%'`.execute(db)
  ).rows;
  // FTS5 tables and their shadow tables (name_data, name_idx, …) have a fixed layout of their own.
  const virtual = objects.filter((o) => o.type === 'table' && /^create virtual table/i.test(o.sql ?? ''));
  const isVirtual = (t: string) => virtual.some((v) => t === v.name || t.startsWith(`${v.name}_`));
  const tables = objects
    // sqlite_sequence is SQLite's own bookkeeping for AUTOINCREMENT.
    .filter(
      (o) =>
        o.type === 'table' &&
        !FRAMEWORK_TABLES.has(o.name) &&
        !isVirtual(o.name) &&
        o.name !== 'sqlite_sequence',
    )
    .map((o) => o.name);
  const primaryKeys = new Map<string, string[]>();
  for (const table of tables) {
    const cols = (
      await sql<{ name: string; pk: number }>`select name, pk from pragma_table_info(${table})`.execute(db)
    ).rows;
    primaryKeys.set(
      table,
      cols
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name),
    );
  }
  const indexes: Schema['indexes'] = [];
  const unique = new Set<string>();
  for (const table of tables) {
    const list = (
      await sql<{
        name: string;
        unique: number;
      }>`select name, "unique" from pragma_index_list(${table})`.execute(db)
    ).rows;
    for (const i of list) if (i.unique) unique.add(i.name);
  }
  for (const o of objects.filter((x) => x.type === 'index' && tables.includes(x.tbl_name))) {
    const cols = (
      await sql<{
        name: string | null;
      }>`select name from pragma_index_info(${o.name}) order by seqno`.execute(db)
    ).rows;
    indexes.push({
      name: o.name,
      table: o.tbl_name,
      unique: unique.has(o.name),
      first: cols[0]?.name ?? null,
    });
  }
  return { primaryKeys, indexes };
}

async function postgresSchema(h: Harness): Promise<Schema> {
  const db = h.database.db;
  const tables = (
    await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db)
  ).rows
    .map((r) => r.table_name)
    .filter((t) => !FRAMEWORK_TABLES.has(t));
  const keyRows = (
    await sql<{ table_name: string; column_name: string }>`
      select tc.table_name, kcu.column_name
      from information_schema.table_constraints tc
      join information_schema.key_column_usage kcu
        on kcu.constraint_name = tc.constraint_name and kcu.table_schema = tc.table_schema
       and kcu.table_name = tc.table_name
      where tc.constraint_type = 'PRIMARY KEY' and tc.table_schema = current_schema()
      order by tc.table_name, kcu.ordinal_position`.execute(db)
  ).rows;
  const primaryKeys = new Map<string, string[]>(tables.map((t) => [t, []]));
  for (const r of keyRows) primaryKeys.get(r.table_name)?.push(r.column_name);
  const indexRows = (
    await sql<{ table_name: string; index_name: string; unique: boolean; first: string | null }>`
      select t.relname as table_name, i.relname as index_name, x.indisunique as unique, a.attname as first
      from pg_index x
      join pg_class i on i.oid = x.indexrelid
      join pg_class t on t.oid = x.indrelid
      join pg_namespace n on n.oid = t.relnamespace
      left join pg_attribute a on a.attrelid = t.oid and a.attnum = x.indkey[0]
      where n.nspname = current_schema()`.execute(db)
  ).rows;
  const indexes = indexRows
    .filter((r) => tables.includes(r.table_name))
    .map((r) => ({ name: r.index_name, table: r.table_name, unique: r.unique, first: r.first }));
  return { primaryKeys, indexes };
}

describeEachDatabase('storage: tenancy-led keys, durability and secure deletion', (h) => {
  const schema = () => (h.dialect === 'sqlite' ? sqliteSchema(h) : postgresSchema(h));

  it('leads every primary key with account_id (accounts is keyed by its own id)', async () => {
    const { primaryKeys, indexes } = await schema();
    assert.ok(primaryKeys.size >= 5, `found tables ${[...primaryKeys.keys()]}`);
    assert.deepEqual(primaryKeys.get('accounts'), ['id']);
    const offenders: string[] = [];
    for (const [table, cols] of primaryKeys) {
      if (table === 'accounts' || cols[0] === 'account_id') continue;
      const exception = PK_EXCEPTIONS[table];
      if (exception?.dialect === h.dialect && exception.accountKey) {
        assert.equal(cols[0], exception.accountKey, `${table}: led by ${exception.accountKey}`);
        continue;
      }
      if (exception?.dialect === h.dialect) {
        const tenancyKey = indexes.some((i) => i.table === table && i.unique && i.first === 'account_id');
        assert.ok(tenancyKey, `${table}: a unique index led by account_id stands in for the key`);
        continue;
      }
      offenders.push(`${table} (${cols.join(', ')})`);
    }
    assert.deepEqual(offenders, [], 'primary keys not led by account_id');
  });

  it('leads every index with account_id, but for the documented cross-account lookups', async () => {
    const { indexes } = await schema();
    const offenders = indexes.filter(
      (i) => i.table !== 'accounts' && i.first !== 'account_id' && !(i.name in INDEX_EXCEPTIONS),
    );
    assert.deepEqual(offenders, [], 'indexes not led by account_id and not a documented exception');
    const hashIndex = indexes.find((i) => i.name === 'api_keys_hash_uq');
    assert.deepEqual(hashIndex, {
      name: 'api_keys_hash_uq',
      table: 'api_keys',
      unique: true,
      first: 'key_hash',
    });
    for (const [name, { table }] of Object.entries(INDEX_EXCEPTIONS)) {
      const found = indexes.find((i) => i.name === name);
      if (found) assert.equal(found.table, table, `${name} is on ${table}`);
    }
  });

  if (h.dialect !== 'sqlite') return;

  /** One PRAGMA through the app's own connection. */
  const pragma = async (name: string) => {
    const rows = (await sql.raw<Record<string, unknown>>(`PRAGMA ${name}`).execute(h.database.db)).rows;
    return Object.values(rows[0] ?? {})[0];
  };

  it('runs SQLite in WAL mode with synchronous=FULL and secure_delete on', async () => {
    assert.equal(String(await pragma('journal_mode')).toLowerCase(), 'wal');
    assert.equal(Number(await pragma('synchronous')), 2, 'synchronous=FULL');
    assert.equal(Number(await pragma('secure_delete')), 1, 'secure_delete=ON');
  });

  it('leaves no byte of a deleted object in the database file or the WAL', async () => {
    const acc = await h.account('enterprise');
    // Lower-case letters only, so case folding and word splitting by a search index leave them whole.
    const mark = () => [...randomBytes(24)].map((b) => String.fromCharCode(97 + (b % 26))).join('');
    const small = { content: mark(), tag: mark(), meta: mark() };
    const large = mark();
    const bodies = [
      {
        title: 'small object',
        type: 'note',
        content: `before ${small.content} after`,
        tags: [small.tag],
        metadata: { secret: small.meta },
      },
      // Larger than a page, so it lives in overflow pages that are freed on delete.
      { title: 'large object', type: 'document', content: `${large} ${'x'.repeat(20_000)} ${large}` },
    ];
    const ids: string[] = [];
    for (const body of bodies) {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
      assert.equal(res.status, 201);
      ids.push(res.body.data.id);
    }
    // The middle of each word: a search index may stem its end and prefix-compress its start.
    const markers = [small.content, small.tag, small.meta, large].map((m) => m.slice(4, 20));
    const file = h.config.database.dialect === 'sqlite' ? h.config.database.file : '';
    const bytes = async () => {
      const ck = (await sql<{ busy: number }>`PRAGMA wal_checkpoint(TRUNCATE)`.execute(h.database.db))
        .rows[0];
      assert.equal(Number(ck?.busy), 0, 'checkpoint completed');
      return [file, `${file}-wal`, `${file}-journal`]
        .filter((f) => fs.existsSync(f))
        .map((f) => fs.readFileSync(f).toString('latin1'))
        .join('\n');
    };

    const stored = await bytes();
    for (const m of markers) assert.ok(stored.includes(m), `control: ${m} is on disk before the delete`);

    for (const id of ids) {
      assert.equal((await h.request('DELETE', `/v1/data/${id}`, { key: acc.adminKey })).status, 204);
    }
    const after = await bytes();
    for (const m of markers) assert.ok(!after.includes(m), `${m} must be overwritten, not merely unlinked`);
  });
});
