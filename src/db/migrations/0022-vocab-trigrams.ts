import { type Kysely, sql } from 'kysely';
import { MAX_INDEXED_WORD_CHARS } from '../../search/document.ts';
import type { Dialect } from '../types.ts';
import { inTransaction } from './0015-symbol-words.ts';

/**
 * SQLite only: the vocabulary's trigram index becomes a plain table kept per account,
 * `search_vocab_trigrams (account_seq, trigram, vocab_id)` WITHOUT ROWID, in place of the FTS5
 * `trigram` table of 0002 (docs/search.md "Wildcards").
 *
 * - **Removal.** FTS5's secure-delete (decisions §5: deleted entries are erased) rewrites the
 *   doclist pages of each of a word's trigrams, at a cost that grows with every account's words.
 *   A `DELETE` of an object of 300,000 unique tokens held the single SQLite writer for 26 s, and
 *   for 64 s beside another account's 300,000 words. Here a word's rows are found by key and
 *   deleted from a B-tree: 13 s and 11 s on the same machine (docs/benchmarks.md, "the
 *   vocabulary's trigrams as per-account rows"). Adding a word costs more (creating that object
 *   4.0 -> 6.4 s): FTS5 appends to a segment, a B-tree inserts each trigram in its place.
 * - **Tenancy.** The FTS5 table was one index over every account's words: `*ing*` read every
 *   account's words holding "ing". Rows here lead with the account's `search_accounts.seq` (the key
 *   of its FTS5 rowid range), so a lookup reads its own account's words only.
 *
 * Triggers keep the table: SQLite has no function that splits a word into trigrams, and a trigger
 * may not use a recursive CTE, so `search_trigram_offsets` lists the offsets 1..126 that a word of
 * up to MAX_INDEXED_WORD_CHARS characters can start a trigram at. `substr` and `length` count
 * characters, as the trigram tokenizer did; words are folded before they reach the vocabulary.
 *
 * A word's account always has its `search_accounts` row: a word enters the vocabulary only from
 * an indexed object, and indexing takes the object's rowid from that row first. Deleting an account
 * cascades to both tables in no set order, so `search_accounts` takes its trigram rows with it.
 *
 * One transaction: the old index goes and the new one is filled together; run again, it finds its
 * work done. Not additive: a process of the previous release still queries `search_vocab_tri` for
 * infix wildcards (docs/deployment.md "Migrations").
 */
const TRIGRAM_OFFSETS = MAX_INDEXED_WORD_CHARS - 2;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  await inTransaction(db, dialect, async (trx) => {
    // Idempotent, like the rewriting migrations: run again (a test's replay), it finds its work done.
    const { rows } = await sql<{ name: string }>`
      SELECT name FROM sqlite_master WHERE name IN ('search_vocab_tri', 'search_vocab_trigrams')`.execute(
      trx,
    );
    if (rows.length === 1 && rows[0]!.name === 'search_vocab_trigrams') return;
    await sql`CREATE TABLE search_trigram_offsets (i INTEGER PRIMARY KEY)`.execute(trx);
    await sql`
      INSERT INTO search_trigram_offsets (i)
      SELECT value FROM json_each(${JSON.stringify(Array.from({ length: TRIGRAM_OFFSETS }, (_, k) => k + 1))})`.execute(
      trx,
    );
    await sql`
      CREATE TABLE search_vocab_trigrams (
        account_seq INTEGER NOT NULL,
        trigram TEXT NOT NULL,
        vocab_id INTEGER NOT NULL,
        PRIMARY KEY (account_seq, trigram, vocab_id)
      ) WITHOUT ROWID`.execute(trx);
    await sql`DROP TRIGGER IF EXISTS search_vocab_ai`.execute(trx);
    await sql`DROP TRIGGER IF EXISTS search_vocab_ad`.execute(trx);
    await sql`DROP TABLE search_vocab_tri`.execute(trx);
    // A word repeats a trigram ("aaaa"): its second row is the first one again.
    await sql`
      CREATE TRIGGER search_vocab_trigrams_ai AFTER INSERT ON search_vocab BEGIN
        INSERT OR IGNORE INTO search_vocab_trigrams (account_seq, trigram, vocab_id)
        SELECT (SELECT seq FROM search_accounts WHERE account_id = new.account_id), substr(new.word, o.i, 3), new.id
        FROM search_trigram_offsets o WHERE o.i <= length(new.word) - 2;
      END`.execute(trx);
    await sql`
      CREATE TRIGGER search_vocab_trigrams_ad AFTER DELETE ON search_vocab BEGIN
        DELETE FROM search_vocab_trigrams
        WHERE account_seq = (SELECT seq FROM search_accounts WHERE account_id = old.account_id)
          AND trigram IN (
            SELECT substr(old.word, o.i, 3) FROM search_trigram_offsets o WHERE o.i <= length(old.word) - 2)
          AND vocab_id = old.id;
      END`.execute(trx);
    await sql`
      CREATE TRIGGER search_accounts_trigrams_ad AFTER DELETE ON search_accounts BEGIN
        DELETE FROM search_vocab_trigrams WHERE account_seq = old.seq;
      END`.execute(trx);
    await sql`
      INSERT OR IGNORE INTO search_vocab_trigrams (account_seq, trigram, vocab_id)
      SELECT a.seq, substr(v.word, o.i, 3), v.id
      FROM search_vocab v
      CROSS JOIN search_accounts a ON a.account_id = v.account_id
      CROSS JOIN search_trigram_offsets o ON o.i <= length(v.word) - 2
      ORDER BY 1, 2, 3`.execute(trx);
  });
}
