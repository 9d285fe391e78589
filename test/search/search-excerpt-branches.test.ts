import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, search } from './corpus.ts';

// decisions §6 and docs/search.md "Excerpts": the excerpt shows the matches, "or the title when only
// the title matched". A word of the query is a match of an object only if the object satisfies the
// branch of the query it sits in: in `(alpha beta) OR gamma`, an object found through `gamma` alone
// has no `alpha` match, even if its content holds the word.
describeEachDatabase('search excerpts: only the branches an object matched through', (h) => {
  let acc: TestAccount;
  const id = {} as Record<'titleOnly' | 'viaTag' | 'viaMeta', string>;
  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(
      id,
      await createNotes(h, acc, {
        titleOnly: { title: 'Gamma rays', content: 'An alpha particle is a helium nucleus.' },
        viaTag: { title: 'Decay', content: 'An alpha particle left the nucleus.', tags: ['beta'] },
        viaMeta: {
          title: 'Emission',
          content: 'Alpha emission is slow.',
          metadata: { description: 'beta decay' },
        },
      }),
    );
  });

  const excerpts = async (q: string) => {
    const res = await search(h, acc.adminKey, { q, limit: 100 });
    assert.equal(res.status, 200, res.raw);
    return Object.fromEntries(
      (res.body.data.results as { id: string; excerpt: string }[]).map((r) => [r.id, r.excerpt]),
    );
  };

  it('an object found only through the title shows the highlighted title', async () => {
    const got = await excerpts('(alpha beta) OR gamma');
    assert.equal(got[id.titleOnly], '<em>Gamma</em> rays');
  });

  it('a branch satisfied through tags or metadata highlights its words in the content', async () => {
    const got = await excerpts('(alpha beta) OR gamma');
    assert.match(got[id.viaTag] ?? '', /An <em>alpha<\/em> particle/);
    const meta = await excerpts('(alpha description:beta) OR gamma');
    assert.match(meta[id.viaMeta] ?? '', /<em>Alpha<\/em> emission/);
    assert.equal(meta[id.titleOnly], '<em>Gamma</em> rays');
  });

  it('a word under NOT, or in an unmatched branch, is never highlighted; AND-only queries are as before', async () => {
    const got = await excerpts('gamma OR (helium -nucleus)');
    assert.equal(got[id.titleOnly], '<em>Gamma</em> rays');
    // Phrases and wildcards are evaluated as the index matches them.
    const phrase = await excerpts('"helium nucleus" OR (gamma zzz)');
    assert.match(phrase[id.titleOnly] ?? '', /a <em>helium<\/em> <em>nucleus<\/em>/);
    const wild = await excerpts('(alph* zzz) OR gam*');
    assert.equal(wild[id.titleOnly], '<em>Gamma</em> rays');
    const plain = await excerpts('alpha particle');
    assert.match(plain[id.titleOnly] ?? '', /An <em>alpha<\/em> <em>particle<\/em>/);
  });
});

// docs/search.md "Excerpts": each matching word in <em>…</em>. A word starts with a letter or a
// digit: a mark after a symbol (the variation selector of ❤️) is not part of the next word.
describeEachDatabase('search excerpts: a word starts with a letter or digit', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
    await createNotes(h, acc, { emoji: { title: 'Emoji', content: 'Status ❤\uFE0Fbudget approved' } });
  });

  it('keeps an emoji variation selector outside the <em>', async () => {
    const res = await search(h, acc.adminKey, { q: 'budget' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.results[0].excerpt, 'Status ❤\uFE0F<em>budget</em> approved');
  });
});
