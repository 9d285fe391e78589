// Issue 10, point 4: account isolation as a property. Account A's objects carry unique marker
// words; account B then aims A's ids at every operation that takes one (from the OpenAPI document)
// and runs generated list and search requests built from A's words. Leaks: any answer of B's that
// holds an A id or an A word, a non-404 for an A id, or a total that counts A's objects.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { describeEachDatabase, type TestAccount, type TestResponse } from '../helpers/harness.ts';
import { documentOf, documentOperations, type FuzzOperation, idPrefix } from '../helpers/openapi-fuzz.ts';

const LONG = process.env.ADS_RELIABILITY_LONG === '1';
const RUNS = LONG ? 5_000 : 300;
const SEED = Number(process.env.ADS_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

const marker = (who: string) => `${who}mark${randomBytes(5).toString('hex')}`;

describeEachDatabase(
  'cross-account isolation: B never sees or touches A',
  (h) => {
    let a: TestAccount;
    let b: TestAccount;
    /** A's marker words, and every id A owns, by prefix. */
    const aWords: string[] = [];
    const aIds = new Map<string, string[]>();
    const bWords: string[] = [];
    let bData = 0;
    let bWebhook = '';
    let operations: FuzzOperation[];
    const leaks: string[] = [];
    let checked = 0;

    const own = (id: string) => {
      const prefix = /^[a-z]+_/.exec(id)![0];
      aIds.set(prefix, [...(aIds.get(prefix) ?? []), id]);
    };

    /** Records a leak when B's answer holds any of A's words, or an A id B did not send itself. */
    function inspect(what: string, res: TestResponse) {
      checked++;
      const raw = res.raw.toLowerCase();
      const word = aWords.find((w) => raw.includes(w.toLowerCase()));
      // A 404 may echo the id from the request ("No data object with id …"): that tells B nothing.
      const id = [...aIds.values()].flat().find((i) => res.raw.includes(i) && !what.includes(i));
      if (word || id) leaks.push(`${what}: ${res.status} holds ${word ?? id}: ${res.raw.slice(0, 200)}`);
    }

    before(async () => {
      a = await h.account('enterprise');
      b = await h.account('enterprise');
      for (let i = 0; i < 4; i++) aWords.push(marker('a'));
      for (let i = 0; i < 2; i++) bWords.push(marker('b'));
      const [w0, w1, w2, w3] = aWords as [string, string, string, string];
      // A: objects whose every field holds a marker, a webhook with deliveries, members, keys.
      for (const type of ['document', 'note', 'record']) {
        const res = await h.request('POST', '/v1/data', {
          key: a.adminKey,
          body: {
            title: `${w0} shared ${type}`,
            type,
            content: `${w1} common words ${w0}-${w1} shared`,
            tags: [w2, 'shared'],
            metadata: { author: w3, status: w3, description: w1, [w2]: w3 },
          },
        });
        assert.equal(res.status, 201, res.raw);
        own(res.body.data.id);
      }
      const hook = await h.request('POST', '/v1/webhooks', {
        key: a.adminKey,
        body: { url: `https://127.0.0.1:9/${w0}`, events: ['*'], secret: w1 },
      });
      own(hook.body.data.id);
      await h.request('POST', '/v1/data', {
        key: a.adminKey,
        body: { title: `${w0} evented`, type: 'note' },
      });
      const deliveries = await h.request('GET', `/v1/webhooks/${hook.body.data.id}/deliveries`, {
        key: a.adminKey,
      });
      for (const d of deliveries.body.data.deliveries) own(d.id);
      const user = await h.request('POST', '/v1/users', {
        key: a.adminKey,
        body: { email: `${w2}@example.com`, role: 'member' },
      });
      own(user.body.data.id);
      own(a.adminId);
      const k = await h.request('POST', '/v1/api-keys', {
        key: a.adminKey,
        body: { name: w3, scopes: ['read'] },
      });
      own(k.body.data.id);
      const list = await h.request('GET', '/v1/data?limit=100', { key: a.adminKey });
      for (const d of list.body.data.items) if (!aIds.get('dat_')?.includes(d.id)) own(d.id);
      // B: its own objects with the shared words, so B's searches do find things.
      for (const type of ['document', 'note']) {
        const res = await h.request('POST', '/v1/data', {
          key: b.adminKey,
          body: {
            title: `${bWords[0]} shared ${type}`,
            type,
            content: `${bWords[1]} common words shared`,
            tags: ['shared'],
          },
        });
        assert.equal(res.status, 201);
        bData++;
      }
      const bHook = await h.request('POST', '/v1/webhooks', {
        key: b.adminKey,
        body: { url: 'https://127.0.0.1:9/b', events: ['*'] },
      });
      bWebhook = bHook.body.data.id;
      operations = documentOperations(documentOf(h.app));
    });

    it("every operation taking an id answers A's ids to B with 404, and A's objects are untouched", async (t) => {
      const before = await h.request('GET', '/v1/data?limit=100', { key: a.adminKey });
      let requests = 0;
      const withIds = operations.filter((o) => o.params.some((p) => p.in === 'path'));
      assert.ok(withIds.length >= 10, `${withIds.length} operations take an id`);
      for (const op of withIds) {
        const pathParams = op.params.filter((p) => p.in === 'path');
        // Each of A's ids for each parameter; the other parameters get B's own ids where B has one.
        for (const target of pathParams) {
          // The other parameters: A's own ids (all-A paths), and B's webhook for a webhook id.
          const others = pathParams.filter((p) => p !== target);
          const fillers = others.length === 0 ? [{}] : [{ useB: false }, { useB: true }];
          for (const id of aIds.get(idPrefix(target.schema) ?? '') ?? []) {
            for (const filler of fillers) {
              const url = op.template.replace(/\{(\w+)\}/g, (_, n: string) => {
                if (n === target.name) return id;
                const prefix = idPrefix(pathParams.find((p) => p.name === n)!.schema) ?? '';
                return 'useB' in filler && filler.useB && prefix === 'wh_'
                  ? bWebhook
                  : (aIds.get(prefix)?.[0] ?? id);
              });
              const body =
                op.method === 'PATCH'
                  ? op.template.startsWith('/v1/users')
                    ? { role: 'admin' }
                    : op.template.startsWith('/v1/webhooks')
                      ? { url: 'https://127.0.0.1:9/stolen' }
                      : { title: 'stolen' }
                  : undefined;
              const res = await h.request(op.method, url, { key: b.adminKey, body });
              requests++;
              inspect(`${op.method} ${url}`, res);
              if (res.status !== 404 || res.body?.error?.code !== 'not_found') {
                leaks.push(`${op.method} ${url}: ${res.status}, not 404 not_found`);
              }
            }
          }
        }
      }
      const after = await h.request('GET', '/v1/data?limit=100', { key: a.adminKey });
      assert.deepEqual(after.body.data.items, before.body.data.items, "A's objects are unchanged");
      assert.equal(
        (await h.request('GET', `/v1/webhooks/${aIds.get('wh_')![0]}`, { key: a.adminKey })).body.data.url,
        `https://127.0.0.1:9/${aWords[0]}`,
      );
      t.diagnostic(`${requests} requests with A's ids by B; leaks so far ${leaks.length}`);
      assert.deepEqual(leaks, []);
    });

    it(`${RUNS} generated list and search requests by B: no A object, word or count`, async (t) => {
      const aWord = fc.constantFrom(...aWords);
      const bWord = fc.constantFrom(...bWords, 'shared', 'common', 'words');
      // Queries built from A's words: plain, prefix and inner wildcards, phrases, fields, OR with B's.
      const aTerm = fc.oneof(
        aWord,
        aWord.map((w) => `${w.slice(0, 6)}*`),
        aWord.map((w) => `*${w.slice(-6)}`),
        aWord.map((w) => `${w.slice(0, 3)}*${w.slice(-3)}`),
        fc.tuple(aWord, aWord).map(([x, y]) => `"${x} ${y}"`),
        fc
          .tuple(fc.constantFrom('title:', 'content:', 'tag:', 'author:', 'status:', 'description:'), aWord)
          .map(([f, w]) => f + w),
      );
      const search = fc
        .record({
          terms: fc.array(aTerm, { minLength: 1, maxLength: 3 }),
          mixed: fc.option(bWord, { nil: undefined }),
          filter: fc.array(
            fc.oneof(
              aWord.map((w) => `tag:${w}`),
              aWord.map((w) => `author:${w}`),
              aWord.map((w) => `status:${w}`),
              aWord.map((w) => `metadata.${w}:${w}`),
              fc.constantFrom('type:note', 'tag:shared'),
            ),
            { maxLength: 2 },
          ),
          sort: fc.constantFrom('relevance', 'date', 'title'),
          limit: fc.integer({ min: 1, max: 100 }),
          page: fc.integer({ min: 1, max: 3 }),
        })
        .map((s) => ({ ...s, q: s.mixed ? `(${s.terms.join(' ')}) OR ${s.mixed}` : s.terms.join(' ') }));
      const listing = fc.record({
        path: fc.constantFrom(
          '/v1/data',
          '/v1/users',
          '/v1/webhooks',
          '/v1/api-keys',
          `/v1/webhooks/${bWebhook}/deliveries`,
        ),
        limit: fc.integer({ min: 1, max: 100 }),
        page: fc.integer({ min: 1, max: 3 }),
        sort: fc.constantFrom(undefined, 'date', 'title'),
      });
      const bUsers = (await h.request('GET', '/v1/users', { key: b.adminKey })).body.data.total;
      const bKeys = (await h.request('GET', '/v1/api-keys', { key: b.adminKey })).body.data.total;
      const totals: Record<string, number> = {
        '/v1/data': bData,
        '/v1/users': bUsers,
        '/v1/webhooks': 1,
        '/v1/api-keys': bKeys,
      };
      let searches = 0;
      let lists = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            search.map((s) => ({ s })),
            listing.map((l) => ({ l })),
          ),
          async (x) => {
            if ('s' in x) {
              const { s } = x;
              const qs = new URLSearchParams({
                q: s.q,
                sort: s.sort,
                limit: String(s.limit),
                page: String(s.page),
              });
              for (const f of s.filter) qs.append('filter', f);
              const res = await h.request('GET', `/v1/search?${qs}`, { key: b.adminKey });
              searches++;
              inspect(`search ${qs}`, res);
              if (res.status !== 200)
                return void leaks.push(`search ${qs}: ${res.status} ${res.raw.slice(0, 200)}`);
              // Only B's own objects may count: with no B word in the query, nothing at all.
              const max = s.mixed ? bData : 0;
              if (res.body.data.total > max)
                leaks.push(`search ${qs}: total ${res.body.data.total} > ${max}`);
            } else {
              const { l } = x;
              const qs = new URLSearchParams({ limit: String(l.limit), page: String(l.page) });
              if (l.sort && l.path === '/v1/data') qs.set('sort', l.sort);
              const res = await h.request('GET', `${l.path}?${qs}`, { key: b.adminKey });
              lists++;
              inspect(`list ${l.path}?${qs}`, res);
              const want = totals[l.path];
              if (res.status !== 200) leaks.push(`list ${l.path}: ${res.status}`);
              else if (want !== undefined && res.body.data.total !== want) {
                leaks.push(`list ${l.path}: total ${res.body.data.total}, B has ${want}`);
              }
            }
          },
        ),
        { numRuns: RUNS, seed: SEED },
      );
      t.diagnostic(
        `seed ${SEED}: ${searches} searches, ${lists} lists by B; responses checked ${checked}; leaks ${leaks.length}`,
      );
      assert.deepEqual(leaks, []);
    });

    it('A still finds its own objects with the same words (the markers are searchable)', async () => {
      // The same query shapes B sent: a prefix wildcard in free text, a metadata field.
      const [w0, w1, w2, w3] = aWords as [string, string, string, string];
      for (const q of [`${w0.slice(0, 8)}*`, `*${w1.slice(-6)}`, w2, `author:${w3}`, `status:${w3}`]) {
        const res = await h.request('GET', `/v1/search?q=${encodeURIComponent(q)}`, { key: a.adminKey });
        assert.ok(res.body.data.total >= 1, `A finds ${q}`);
      }
      const res = await h.request('GET', `/v1/search?q=${aWords[1]}&filter=tag:${aWords[2]}`, {
        key: a.adminKey,
      });
      assert.equal(res.body.data.total, 3);
      assert.match(res.body.data.results[0].excerpt, new RegExp(`<em>${aWords[1]}</em>`));
    });
  },
  { env: { ADS_WEBHOOK_ALLOW_PRIVATE: 'true' } },
);
