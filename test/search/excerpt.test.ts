import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  buildExcerpt,
  escapeHtml,
  FETCH_CHARS,
  leadingExcerpt,
  MAX_SCAN_CHARS,
  stemNeedle,
} from '../../src/search/excerpt.ts';
import { parseQuery, positiveTerms } from '../../src/search/parser.ts';
import { stemWord } from '../../src/search/text.ts';

function excerpt(text: string, q: string, words?: number): string | null {
  return buildExcerpt(text, positiveTerms(parseQuery(q)), words === undefined ? {} : { words });
}

/** The words wrapped in <em>, in order. */
function highlighted(html: string | null): string[] {
  assert.ok(html !== null, 'expected an excerpt');
  return [...html.matchAll(/<em>(.*?)<\/em>/g)].map((m) => m[1]!);
}

/** Every tag in the excerpt is <em> or </em>, and no stray `<` or `>` is left. */
function assertOnlyEm(html: string): void {
  for (const m of html.matchAll(/<\/?([^\s>/]*)[^>]*>/g)) assert.equal(m[1], 'em', `unexpected tag ${m[0]}`);
  const bare = html.replaceAll('<em>', '').replaceAll('</em>', '');
  assert.ok(!/[<>]/.test(bare), `unescaped angle bracket in ${html}`);
  assert.ok(!/&(?!amp;|lt;|gt;|quot;|#39;)/.test(bare), `unescaped & in ${html}`);
}

/** Visible words of an excerpt, ignoring markup and the cut marks. */
function visibleWords(html: string): string[] {
  return html
    .replace(/<\/?em>/g, '')
    .replaceAll('…', ' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

describe('highlighting', () => {
  test('the matched word is wrapped, the text kept as written', () => {
    assert.equal(excerpt('Quarterly finance report', 'finance'), 'Quarterly <em>finance</em> report');
    assert.equal(excerpt('Quarterly FINANCE report', 'Finance'), 'Quarterly <em>FINANCE</em> report');
    assert.equal(excerpt('Un CAFÉ au lait', 'cafe'), 'Un <em>CAFÉ</em> au lait');
    assert.equal(excerpt('Un cafe\u0301 au lait', 'café'), 'Un <em>cafe\u0301</em> au lait');
  });

  test('every occurrence in the window is wrapped, and every query term', () => {
    assert.deepEqual(highlighted(excerpt('a fox, a dog and a fox again', 'fox dog')), ['fox', 'dog', 'fox']);
    assert.deepEqual(highlighted(excerpt('cats or dogs', 'cat OR dog')), ['cats', 'dogs']);
  });

  test('a word longer than the index keeps (128 characters) is never highlighted, as it never matches', () => {
    // Shown clipped to its ends, as any giant word is.
    const clipped = (c: string) => `${c.repeat(30)}…${c.repeat(30)}`;
    assert.equal(
      excerpt(`omega ${'x'.repeat(129)} end`, 'omega OR xxx*'),
      `<em>omega</em> ${clipped('x')} end`,
    );
    assert.equal(
      excerpt(`omega ${'x'.repeat(129)} end`, `omega OR ${'x'.repeat(129)}`),
      `<em>omega</em> ${clipped('x')} end`,
    );
    assert.equal(
      excerpt(`omega ${'y'.repeat(128)} end`, 'omega OR yyy*'),
      `<em>omega</em> <em>${clipped('y')}</em> end`,
    );
  });

  test('negated terms are not highlighted', () => {
    assert.deepEqual(highlighted(excerpt('finance report on finance', 'finance -report')), [
      'finance',
      'finance',
    ]);
  });

  test('English stems: a `running` query highlights runs and run', () => {
    const text = 'She runs daily. Running is fun; a run a day. Runner ran.';
    assert.deepEqual(highlighted(excerpt(text, 'running')), ['runs', 'Running', 'run']);
    assert.deepEqual(highlighted(excerpt('The connection connected', 'connect')), [
      'connection',
      'connected',
    ]);
  });

  test('wildcards: prefix, suffix and infix, whole word only', () => {
    const text = 'finance financial define refinance balance fence fancy fins';
    assert.deepEqual(highlighted(excerpt(text, 'fin*')), ['finance', 'financial', 'fins']);
    assert.deepEqual(highlighted(excerpt(text, '*ance')), ['finance', 'refinance', 'balance']);
    assert.deepEqual(highlighted(excerpt(text, 'f*nce')), ['finance', 'fence']);
    assert.deepEqual(highlighted(excerpt(text, 'f*n*e')), ['finance', 'fence']);
    assert.deepEqual(highlighted(excerpt('Éclair ECLAT', 'ecl*')), ['Éclair', 'ECLAT']);
  });

  test('phrases match consecutive words only, across punctuation, with stems', () => {
    const text = 'brown dog. The quick brown fox; brown, fox! fox brown';
    assert.deepEqual(highlighted(excerpt(text, '"brown fox"')), ['brown', 'fox', 'brown', 'fox']);
    assert.equal(excerpt('brown dog, red fox', '"brown fox"'), null);
    assert.deepEqual(highlighted(excerpt('he saw two running dogs', '"run dog"')), ['running', 'dogs']);
    assert.deepEqual(highlighted(excerpt('e-mail me', 'e-mail')), ['e', 'mail']);
  });

  test('field terms count only for title, content and tags', () => {
    const text = 'draft by alice about finance';
    assert.equal(excerpt(text, 'author:alice'), null);
    assert.equal(excerpt(text, 'status:draft type:finance'), null);
    assert.deepEqual(highlighted(excerpt(text, 'title:alice content:draft tag:finance')), [
      'draft',
      'alice',
      'finance',
    ]);
  });

  test('nothing to match gives null', () => {
    assert.equal(excerpt('Quarterly finance report', 'budget'), null);
    assert.equal(excerpt('', 'budget'), null);
    assert.equal(buildExcerpt('Quarterly finance report', []), null);
    assert.equal(excerpt('refinance', 'fin*'), null);
  });
});

describe('words and marks', () => {
  test('a word starts with a letter or digit: a variation selector stays outside the <em>', () => {
    assert.equal(
      excerpt('Status ❤\uFE0Fbudget approved', 'budget'),
      'Status ❤\uFE0F<em>budget</em> approved',
    );
    assert.equal(excerpt('a \u093Ebudget', 'budget'), 'a \u093E<em>budget</em>');
  });

  test('a script mark is part of its word; an accent folds away', () => {
    assert.equal(excerpt('यह काम है, कम नहीं', 'काम'), 'यह <em>काम</em> है, कम नहीं');
    assert.equal(excerpt('Αθήνα ΝΟΜΟΣ:ΑΤΤΙΚΗ', 'αθηνα νομος'), '<em>Αθήνα</em> <em>ΝΟΜΟΣ</em>:ΑΤΤΙΚΗ');
  });

  test('a word of up to 128 characters outside the BMP is highlighted, a longer one is not', () => {
    assert.deepEqual(highlighted(excerpt(`a ${'𠀀'.repeat(128)} b`, '𠀀*')), [
      `${'𠀀'.repeat(30)}…${'𠀀'.repeat(30)}`,
    ]);
    assert.equal(excerpt(`a ${'𠀀'.repeat(129)} b`, '𠀀*'), null);
  });
});

describe('HTML safety', () => {
  test('escapeHtml escapes the five special characters', () => {
    assert.equal(
      escapeHtml(`<a href="x" title='y'>&amp;</a>`),
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
    );
  });

  test('markup in the text comes back escaped; only <em> is real markup', () => {
    const text = `Hello <script>alert("x")</script> & <b onclick='y'>bold</b> <em>fake</em> finance`;
    const html = excerpt(text, 'finance script em')!;
    assert.ok(html.includes('&lt;<em>script</em>&gt;alert(&quot;x&quot;)&lt;/<em>script</em>&gt;'), html);
    assert.ok(html.includes('&amp; &lt;b onclick=&#39;y&#39;&gt;bold&lt;/b&gt;'), html);
    assert.ok(html.includes('&lt;<em>em</em>&gt;fake&lt;/<em>em</em>&gt; <em>finance</em>'), html);
    assertOnlyEm(html);
  });
});

describe('window and cuts', () => {
  test('a match in the middle is cut on both sides with about 30 words', () => {
    const html = excerpt(numbered(100), 'w50')!;
    assert.ok(html.startsWith('…') && html.endsWith('…'), html);
    assert.equal(visibleWords(html).length, 30);
    assert.ok(html.includes('<em>w50</em>'));
    assert.ok(html.includes('w40 '), 'about a third of the window precedes the match');
  });

  test('a match at the start or the end fills the window from the other side', () => {
    const first = excerpt(numbered(100), 'w0')!;
    assert.ok(first.startsWith('<em>w0</em> w1') && first.endsWith('w29…'), first);
    const last = excerpt(numbered(100), 'w99')!;
    assert.ok(last.startsWith('…w70 ') && last.endsWith('<em>w99</em>'), last);
    assert.equal(visibleWords(last).length, 30);
  });

  test('the scan limit counts characters as the databases do: one outside the BMP is one', () => {
    // 140,000 characters (210,000 UTF-16 units) before the word: within the 200,000 scanned.
    const html = excerpt(`${'𠀀 '.repeat(70_000)}target`, 'target');
    assert.ok(html?.endsWith('<em>target</em>'), String(html?.slice(-40)));
    // Past 200,000 characters the word is not reached.
    assert.equal(excerpt(`${'𠀀 '.repeat(100_000)}target`, 'target'), null);
  });

  test('a short text is not cut', () => {
    assert.equal(excerpt(numbered(10), 'w5'), numbered(10).replace('w5', '<em>w5</em>'));
  });

  test('the window size is configurable', () => {
    const html = excerpt(numbered(100), 'w50', 10)!;
    assert.equal(visibleWords(html).length, 10);
    assert.equal(visibleWords(excerpt(numbered(100), 'w50', 0)!).length, 1);
  });

  test('the first match is the anchor; later matches outside the window are not shown', () => {
    const html = excerpt(`${numbered(20)} target ${numbered(100)} target`, 'target')!;
    assert.deepEqual(highlighted(html), ['target']);
    assert.ok(html.endsWith('…'));
  });

  test('a phrase straddling the window edge is highlighted on the visible side', () => {
    // The window is w0..w29; the phrase continues into w30, which is not shown.
    const html = excerpt(numbered(60), 'w5 "w29 w30"')!;
    assert.ok(html.endsWith(' <em>w29</em>…'), html);
    assert.deepEqual(highlighted(html), ['w5', 'w29']);
  });

  test('punctuation glued to edge words is kept, whitespace is collapsed', () => {
    assert.equal(
      excerpt('("Finance"),\n\n  and\tmore.', 'finance'),
      '(&quot;<em>Finance</em>&quot;), and more.',
    );
    const html = excerpt(`${numbered(40)} (w40) end.`, 'end')!;
    assert.ok(html.endsWith('(w40) <em>end</em>.'), html);
  });

  test('text made only of punctuation around the window still marks the cut', () => {
    assert.equal(excerpt('--- finance ---', 'finance', 1), '…<em>finance</em>…');
  });

  test('giant words and gaps are clipped', () => {
    const html = excerpt(`${'a'.repeat(50_000)} ${'!'.repeat(50_000)} finance`, 'finance')!;
    const a = 'a'.repeat(30);
    const bang = '!'.repeat(14);
    assert.equal(html, `${a}…${a} ${bang}…${bang} <em>finance</em>`);
  });
});

describe('large text', () => {
  const filler = 'lorem ipsum dolor sit amet '.repeat(200_000); // 5.4 MB

  test('works on 5 MB with an early match', () => {
    const html = excerpt(`intro finance ${filler}`, 'finance')!;
    assert.ok(html.startsWith('intro <em>finance</em> lorem') && html.endsWith('…'), html);
  });

  test('finds a match inside the scanned prefix', () => {
    const at = MAX_SCAN_CHARS / 2;
    const html = excerpt(`${filler.slice(0, at)} finance ${filler}`, 'finance')!;
    assert.deepEqual(highlighted(html), ['finance']);
    assert.ok(html.startsWith('…') && html.endsWith('…'));
  });

  // The databases return FETCH_CHARS characters of a longer content, one more than is scanned.
  test('a window that ends at the scan limit ends with … when the content goes on', () => {
    const content = `${'x '.repeat(99_990)}quokka ${'y '.repeat(50_000)}`;
    const html = excerpt(content.slice(0, FETCH_CHARS), 'quokka')!;
    assert.ok(html.includes('<em>quokka</em>') && html.endsWith('y y…'), html.slice(-40));
    assert.ok(leadingExcerpt(`${'z'.repeat(MAX_SCAN_CHARS - 1)} y`.slice(0, FETCH_CHARS)).endsWith('…'));
  });

  test('a word the scan limit cuts is not shown as if whole, nor matched', () => {
    // `quokkas` starts 4 characters before the limit: only `quok` is scanned.
    const content = `${'x '.repeat((MAX_SCAN_CHARS - 10) / 2)}marks quokkas tail`;
    assert.equal(excerpt(content, 'quok'), null);
    const html = excerpt(content, 'marks')!;
    assert.ok(html.endsWith('x <em>marks</em>…'), html.slice(-40));
    assert.ok(!leadingExcerpt(content, { words: 200 }).includes('quok'));
    // Ending at the limit, with a separator after it, a word is whole.
    const whole = `${'x '.repeat((MAX_SCAN_CHARS - 6) / 2)}quokka tail`;
    assert.ok(excerpt(whole, 'quokka')!.endsWith('<em>quokka</em>…'));
  });

  test('a match only beyond the scanned prefix gives null (the caller falls back)', () => {
    assert.equal(excerpt(`${filler} finance`, 'finance'), null);
  });

  test('a 5 MB text without separators works with wildcards and stems', () => {
    assert.equal(excerpt('x'.repeat(5_000_000), 'x*y'), null);
    assert.equal(excerpt('x'.repeat(5_000_000), 'running'), null);
    // One 5,000,000-character word: longer than the index keeps, so it matches nothing.
    assert.equal(excerpt('x'.repeat(5_000_000), 'x*'), null);
    assert.ok(excerpt(`${'x'.repeat(128)} ${'x'.repeat(5_000_000)}`, 'x*')!.startsWith('<em>x'));
  });
});

describe('properties', () => {
  test('random text and queries give only escaped text and <em>', () => {
    const word = fc.oneof(
      fc.constantFrom('finance', 'Running', 'runs', 'café', 'CAFE', '<b>', '&amp;', '"', "'", '日本', '😀'),
      fc.string({ unit: 'binary', maxLength: 8 }),
    );
    const sep = fc.constantFrom(' ', ', ', '. ', '\n', ' - ', '<', '>', '&');
    const text = fc.array(fc.tuple(word, sep), { maxLength: 80 }).map((p) => p.flat().join(''));
    const query = fc.constantFrom(
      'finance',
      'run',
      'cafe',
      'fin*',
      '*s',
      '"runs finance"',
      'b',
      'amp',
      'r*n*',
    );
    fc.assert(
      fc.property(text, query, fc.integer({ min: 1, max: 40 }), (t, q, n) => {
        const html = excerpt(t, q, n);
        if (html === null) return;
        assertOnlyEm(html);
        assert.ok(html.includes('<em>'), html);
        // n words of at most 60 characters and gaps of at most 30, each escaped at worst 6-fold.
        assert.ok(html.length <= (n + 1) * (60 + 30) * 6 + 20, 'excerpt size is bounded');
      }),
      { numRuns: 3000 },
    );
  });
});

// Every suffix the stemmer's rules look for (steps 1a-5 of Porter's algorithm), and endings that
// lead into them.
const SUFFIXES = (
  's es ies sses ss ed eed ing ings ied y ly ily ely bly ably ibly ally ently ously ' +
  'ational tional enci anci izer bli alli entli eli ousli ization ation ator alism iveness ' +
  'fulness ousness aliti iviti biliti bility ability ibility logi logy logies icate ative alize ' +
  'iciti ical ful ness al ance ence er ic able ible ant ement ment ent ou ism ate iti ous ive ize ' +
  'ion sion tion e ll lled lling at bl iz ated ating izing bling ency ancy icity ities ivity'
).split(' ');
const ROOTS = (
  'relat condit sensib happ generous organ digit hop hopp agre fl sk differ probab activ stab ' +
  'analog electr nat rat fin financ run runn cafe y yell yield b bab kebab formal format ' +
  'radic crit sens respons employ valu adjust depend hesit oscill contro feed bleed sc'
).split(' ');

describe('skipping text that cannot match', () => {
  test('every word begins with the needle of its stem', () => {
    const words = ROOTS.flatMap((r) => SUFFIXES.flatMap((a) => [r + a, ...SUFFIXES.map((b) => r + a + b)]));
    for (const w of words) assert.ok(w.startsWith(stemNeedle(stemWord(w))), `${w} -> ${stemWord(w)}`);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,14}$/), fc.constantFrom('', ...SUFFIXES), (r, a) => {
        const w = r + a;
        assert.ok(w.startsWith(stemNeedle(stemWord(w))), `${w} -> ${stemWord(w)}`);
      }),
      { numRuns: 20_000 },
    );
  });

  test('gives the excerpt a scan of every word gives', () => {
    // Few roots, many endings: a query word's other forms are in most texts.
    const forms = ROOTS.slice(0, 8).flatMap((r) => SUFFIXES.map((a) => r + a));
    const word = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...forms) },
      fc.constantFrom('finance', 'Financial', 'RUNNING', 'runs', 'kebab', 'babble', 'the', 'a', 'x1'),
      fc.stringMatching(/^[A-Za-z0-9]{1,10}$/),
    );
    const sep = fc.constantFrom(' ', ', ', '. ', '\n', ' - ', '(', ') ', '&', "'");
    const text = fc.array(fc.tuple(word, sep), { maxLength: 300 }).map((p) => p.flat().join(''));
    const query = fc.oneof(
      fc.constantFrom(...forms),
      fc.tuple(fc.constantFrom(...forms), fc.constantFrom(...forms)).map(([a, b]) => `"${a} ${b}"`),
      fc.tuple(fc.constantFrom(...forms), fc.constantFrom(...forms)).map(([a, b]) => `${a} OR ${b}`),
      fc.constantFrom(...forms).map((f) => `${f.slice(0, 3)}*`),
      fc.constantFrom(...forms).map((f) => `*${f.slice(1, 4)}*`),
      fc.constantFrom('finance', 'bab*', 'fin*l', '"the kebab"', 'title:finance', 'a', 'x1'),
    );
    fc.assert(
      fc.property(text, query, fc.integer({ min: 1, max: 60 }), (t, q, n) => {
        const terms = positiveTerms(parseQuery(q));
        assert.equal(
          buildExcerpt(t, terms, { words: n }),
          buildExcerpt(t, terms, { words: n, fullScan: true }),
          `${q} (${n} words) in ${t}`,
        );
      }),
      { numRuns: 3000 },
    );
  });

  test('a match late in a long text keeps the words before it', () => {
    const before = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ');
    const html = excerpt(`${before} finance end`, 'finance', 30)!;
    assert.equal(
      html,
      buildExcerpt(`${before} finance end`, positiveTerms(parseQuery('finance')), {
        words: 30,
        fullScan: true,
      }),
    );
    assert.deepEqual(visibleWords(html).slice(-3), ['w499', 'finance', 'end']);
    assert.equal(visibleWords(html).length, 30);
  });

  test('a needle inside another word does not hide the match after it', () => {
    assert.deepEqual(highlighted(excerpt('a kebab then babble and bab', 'bab*')), ['babble', 'bab']);
    assert.equal(excerpt('financially speaking', 'finance'), null);
    assert.deepEqual(highlighted(excerpt('refinance, then finances', 'finance')), ['finances']);
  });
});
