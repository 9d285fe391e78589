import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL only: concurrent writers to one account no longer queue on its vocabulary. Every
 * object holds common words ("the", "and"), and each write added 1 to their `search_vocab` rows,
 * so every write of an account waited for the one before it to commit: at 10 concurrent writers
 * the write rate was what one writer reached (docs/benchmarks.md, "Writes"). A word's count is now
 * the sum of up to VOCAB_STRIPES rows (`stripe`), and a transaction adds to the stripe of its
 * session (backend pid mod VOCAB_STRIPES), as 0006 does for object counts.
 *
 * A removal takes from a row that is above zero, its own stripe first, and deletes a row that
 * reaches zero: every row stays above zero, so a word no object holds has no rows left, in the
 * same transaction that removed its last holder (as before). The rows of one word are taken in
 * word order, so writers still cannot deadlock. `search_vocab_apply` does this in one call.
 *
 * Not additive: a process of the previous release upserts on (account_id, word), which is no longer
 * unique (docs/deployment.md "Migrations"). SQLite has one writer and keeps one row per word.
 */
export const VOCAB_STRIPES = 16;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`ALTER TABLE search_vocab ADD COLUMN stripe smallint NOT NULL DEFAULT 0`.execute(db);
  await sql`ALTER TABLE search_vocab DROP CONSTRAINT search_vocab_pkey`.execute(db);
  // Still serves `LIKE 'f%e'` on word (COLLATE "C"), and finds a word's rows.
  await sql`ALTER TABLE search_vocab ADD PRIMARY KEY (account_id, word, stripe)`.execute(db);
  // Zero only inside search_vocab_apply, which deletes the rows it empties before it returns.
  await sql`ALTER TABLE search_vocab ADD CONSTRAINT search_vocab_docs_counted CHECK (docs >= 0) NOT VALID`.execute(
    db,
  );
  await vocabApplyDefinition.execute(db);
}

/**
 * search_vocab_apply(account, delta, stripe): applies word -> change (a jsonb object) to the
 * account's vocabulary, in word order. Additions go to `stripe`. A removal takes from one row that
 * holds enough (the own stripe first) in one statement; failing that (the row changed meanwhile, or
 * a bulk removal needs several rows) it locks rows above zero one at a time. Rows it empties are
 * deleted at the end, one statement each (they are locked by then, so that waits for no one).
 */
export const vocabApplyDefinition = sql`
CREATE OR REPLACE FUNCTION search_vocab_apply(p_account text, p_delta jsonb, p_stripe smallint)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  w text COLLATE "C";
  d integer;
  i integer;
  s smallint;
  n integer;
  take integer;
  tries integer;
  emptied_words text[] COLLATE "C" := '{}';
  emptied_stripes smallint[] := '{}';
BEGIN
  IF NOT EXISTS (SELECT FROM jsonb_each_text(p_delta) WHERE value::integer < 0) THEN
    -- Additions only (every create): one statement, in word order.
    INSERT INTO search_vocab (account_id, word, stripe, docs)
    SELECT p_account, key COLLATE "C", p_stripe, value::integer
    FROM jsonb_each_text(p_delta) WHERE value::integer > 0 ORDER BY 2
    ON CONFLICT (account_id, word, stripe) DO UPDATE SET docs = search_vocab.docs + excluded.docs;
    RETURN;
  END IF;
  FOR w, d IN SELECT key COLLATE "C", value::integer FROM jsonb_each_text(p_delta) ORDER BY 1 LOOP
    IF d > 0 THEN
      INSERT INTO search_vocab (account_id, word, stripe, docs) VALUES (p_account, w, p_stripe, d)
      ON CONFLICT (account_id, word, stripe) DO UPDATE SET docs = search_vocab.docs + excluded.docs;
      CONTINUE;
    END IF;
    d := -d;
    UPDATE search_vocab v SET docs = v.docs - d
    WHERE v.account_id = p_account AND v.word = w AND v.docs >= d AND v.stripe = (
      SELECT x.stripe FROM search_vocab x
      WHERE x.account_id = p_account AND x.word = w AND x.docs >= d
      ORDER BY x.stripe = p_stripe DESC, x.stripe LIMIT 1)
    RETURNING v.stripe, v.docs INTO s, n;
    IF FOUND THEN
      IF n = 0 THEN
        emptied_words := emptied_words || w;
        emptied_stripes := emptied_stripes || s;
      END IF;
      CONTINUE;
    END IF;
    tries := 0;
    WHILE d > 0 LOOP
      tries := tries + 1;
      -- Bounded: each pass empties a row or finishes; a row is lost only to a writer that took
      -- from it, which needs a holder of its own.
      EXIT WHEN tries > 10000;
      SELECT v.stripe, v.docs INTO s, n FROM search_vocab v
      WHERE v.account_id = p_account AND v.word = w AND v.docs > 0
      ORDER BY v.stripe = p_stripe DESC, v.stripe
      LIMIT 1 FOR UPDATE;
      IF NOT FOUND THEN
        -- The row chosen was emptied while this waited for it: try another, if any is left.
        EXIT WHEN NOT EXISTS (
          SELECT FROM search_vocab v WHERE v.account_id = p_account AND v.word = w AND v.docs > 0);
        CONTINUE;
      END IF;
      take := least(n, d);
      UPDATE search_vocab v SET docs = n - take
      WHERE v.account_id = p_account AND v.word = w AND v.stripe = s;
      IF take = n THEN
        emptied_words := emptied_words || w;
        emptied_stripes := emptied_stripes || s;
      END IF;
      d := d - take;
    END LOOP;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(emptied_words, 1), 0) LOOP
    DELETE FROM search_vocab v
    WHERE v.account_id = p_account AND v.word = emptied_words[i] AND v.stripe = emptied_stripes[i]
      AND v.docs = 0;
  END LOOP;
END
$fn$`;
