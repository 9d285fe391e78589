import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * The search index (docs/search.md). Text is folded, split and stemmed by the service
 * (src/search/document.ts), so neither database's tokenizer decides what a word is.
 *
 * Both dialects: `search_documents` (one row per indexed object, cascading from data_objects, with
 * copies of the small fields that filters and sorts read, so a search never reads a row's content)
 * and `search_vocab` (each account's distinct words with a document count, for suffix and infix
 * wildcards).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') await upPostgres(db);
  else await upSqlite(db);
}

async function upSqlite(db: Kysely<unknown>): Promise<void> {
  // FTS5 rowids are `seq * 2^32 + next_doc` (src/search/compile-sqlite.ts): each account's objects
  // occupy one rowid range, so a search walks only its own account's postings. Never reused.
  await sql`
    CREATE TABLE search_accounts (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id TEXT NOT NULL UNIQUE REFERENCES accounts (id) ON DELETE CASCADE,
      next_doc INTEGER NOT NULL DEFAULT 0
    )`.execute(db);
  await sql`
    CREATE TABLE search_documents (
      doc INTEGER PRIMARY KEY,
      account_id TEXT NOT NULL,
      id TEXT NOT NULL,
      type TEXT NOT NULL,
      title_sort TEXT NOT NULL,
      created_at TEXT NOT NULL,
      tags TEXT NOT NULL,
      metadata TEXT NOT NULL,
      UNIQUE (account_id, id),
      FOREIGN KEY (account_id, id) REFERENCES data_objects (account_id, id) ON DELETE CASCADE
    )`.execute(db);
  // Contentless: the text lives once, in data_objects. Rows are removed with FTS5's 'delete'
  // command and the row's original values (recomputed from the object), which with secure-delete
  // takes the tokens out of the index pages at once (decisions §5); contentless_delete=1 would
  // only record a tombstone and leave them until the next merge. Rowids are never reused, so an
  // FTS5 row orphaned by a delete that bypassed the service can never match again.
  // Columns as src/search/compile-sqlite.ts FTS_COLUMNS lists them: stems per field, then the exact
  // words per field (`_x`, for wildcards). No prefix indexes: they would cover the stem columns too
  // (2.6 times the size), and prefixes of 3+ characters are fast from the term index alone.
  await sql`
    CREATE VIRTUAL TABLE search_fts USING fts5(
      type, title, tags, content, author, status, description,
      title_x, tags_x, content_x, author_x, status_x, description_x,
      content='', tokenize='ascii')`.execute(db);
  await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1)`.execute(db);

  await sql`
    CREATE TABLE search_vocab (
      id INTEGER PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
      word TEXT NOT NULL,
      docs INTEGER NOT NULL,
      UNIQUE (account_id, word)
    )`.execute(db);
  // Trigram index over the vocabulary (not the content): `*anc*` finds candidate words here.
  await sql`
    CREATE VIRTUAL TABLE search_vocab_tri USING fts5(
      word, content='search_vocab', content_rowid='id', tokenize='trigram')`.execute(db);
  await sql`INSERT INTO search_vocab_tri (search_vocab_tri, rank) VALUES ('secure-delete', 1)`.execute(db);
  await sql`
    CREATE TRIGGER search_vocab_ai AFTER INSERT ON search_vocab BEGIN
      INSERT INTO search_vocab_tri (rowid, word) VALUES (new.id, new.word);
    END`.execute(db);
  await sql`
    CREATE TRIGGER search_vocab_ad AFTER DELETE ON search_vocab BEGIN
      INSERT INTO search_vocab_tri (search_vocab_tri, rowid, word) VALUES ('delete', old.id, old.word);
    END`.execute(db);
}

async function upPostgres(db: Kysely<unknown>): Promise<void> {
  // Both are trusted contrib extensions: the database owner may create them.
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
  await sql`CREATE EXTENSION IF NOT EXISTS btree_gin`.execute(db);
  // `vector`: every lexeme with positions and weights (A title, B tags, C content, D metadata and
  // type), for matching; it is the largest column and goes out of line first. `head`: title and tag
  // lexemes, for the score's tiers; `rank`: stems with a few positions, for ts_rank. Ranking reads
  // those two for every match, so they stay in the row (toast_tuple_target) and use lz4 where the
  // server has it.
  const { rows } = await sql<{ enumvals: string[] | null }>`
    SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'`.execute(db);
  const lz4 = rows[0]?.enumvals?.includes('lz4') ? sql`COMPRESSION lz4` : sql``;
  await sql`
    CREATE TABLE search_documents (
      account_id text NOT NULL,
      id text NOT NULL,
      type text NOT NULL,
      title_sort text NOT NULL,
      created_at timestamptz NOT NULL,
      tags jsonb NOT NULL,
      metadata jsonb NOT NULL,
      vector tsvector ${lz4} NOT NULL,
      head tsvector ${lz4} NOT NULL,
      rank tsvector ${lz4} NOT NULL,
      PRIMARY KEY (account_id, id),
      FOREIGN KEY (account_id, id) REFERENCES data_objects (account_id, id) ON DELETE CASCADE
    ) WITH (toast_tuple_target = 4096)`.execute(db);
  // account_id inside the GIN index (btree_gin) keeps every lookup within one account.
  await sql`CREATE INDEX search_documents_vector_idx ON search_documents USING gin (account_id, vector)`.execute(
    db,
  );
  // COLLATE "C" lets the primary key serve `LIKE 'f%e'`; the trigram index serves `LIKE '%anc%'`.
  await sql`
    CREATE TABLE search_vocab (
      account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
      word text COLLATE "C" NOT NULL,
      docs integer NOT NULL,
      PRIMARY KEY (account_id, word)
    ) WITH (fillfactor = 50)`.execute(db);
  await sql`CREATE INDEX search_vocab_trgm_idx ON search_vocab USING gin (account_id, word gin_trgm_ops)`.execute(
    db,
  );
}
