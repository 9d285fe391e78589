import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import type { AppError } from '../../src/http/errors.ts';
import { abandonedAfterMs, answerBox, createIdempotencyPurger } from '../../src/http/idempotency.ts';
import { completeIdempotencyKey } from '../../src/http/idempotency-repo.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { secretBoxFor } from '../../src/lib/secrets.ts';
import { createData } from '../../src/modules/data/service.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { liveInvitationToken } from '../helpers/invitations.ts';

describeEachDatabase('Idempotency-Key on POST (Stripe semantics)', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  const count = async (accountId: string) =>
    Number(
      (
        await h.database.db
          .selectFrom('data_objects')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('account_id', '=', accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  const post = (key: string, body: unknown, idem: string) =>
    h.request('POST', '/v1/data', { key, body, headers: { 'idempotency-key': idem } });

  it('replays the first response for the same key and body, creating one object', async () => {
    const before = await count(acc.id);
    const first = await post(acc.adminKey, { title: 'Once', type: 'note' }, 'key-1');
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const second = await post(acc.adminKey, { title: 'Once', type: 'note' }, 'key-1');
    assert.equal(second.status, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.deepEqual(second.body.data, first.body.data);
    assert.equal(await count(acc.id), before + 1);
  });

  it('answers the same key with a different body with 409 idempotency_conflict', async () => {
    await post(acc.adminKey, { title: 'A', type: 'note' }, 'key-2');
    const res = await post(acc.adminKey, { title: 'B', type: 'note' }, 'key-2');
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'idempotency_conflict');
  });

  it('answers the same key on another resource of the same route with 409, and does not act', async () => {
    const invite = (email: string) =>
      h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role: 'member' } });
    const [one, two] = [await invite('resend-one@example.com'), await invite('resend-two@example.com')];
    const resend = (id: string) =>
      h.request('POST', `/v1/users/${id}/invitation`, {
        key: acc.adminKey,
        headers: { 'idempotency-key': 'key-resend' },
      });
    assert.equal((await resend(one.body.data.id)).status, 200);
    const other = await resend(two.body.data.id);
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'idempotency_conflict');
    assert.equal(other.headers['idempotent-replayed'], undefined);
  });

  it('runs concurrent duplicates once; every caller gets the same object', async () => {
    const before = await count(acc.id);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => post(acc.adminKey, { title: 'Race', type: 'note' }, 'key-3')),
    );
    assert.deepEqual(new Set(results.map((r) => r.status)), new Set([201]));
    assert.equal(new Set(results.map((r) => r.body.data.id)).size, 1);
    assert.equal(await count(acc.id), before + 1);
    assert.equal(results.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 4);
  });

  it('stores 4xx answers too, but not requests the schema refused', async () => {
    const taken = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'dup@example.com', role: 'member' },
      headers: { 'idempotency-key': 'key-4a' },
    });
    assert.equal(taken.status, 201);
    const conflict = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'DUP@example.com', role: 'member' },
      headers: { 'idempotency-key': 'key-4b' },
    });
    assert.equal(conflict.status, 409);
    const replay = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'DUP@example.com', role: 'member' },
      headers: { 'idempotency-key': 'key-4b' },
    });
    assert.equal(replay.status, 409);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const invalid = await post(acc.adminKey, { title: '' }, 'key-4c');
    assert.equal(invalid.status, 400);
    const fixed = await post(acc.adminKey, { title: 'Valid now', type: 'note' }, 'key-4c');
    assert.equal(fixed.status, 201, 'a schema error is not stored; the key is still free');
  });

  it('forgets a key after 24 hours', async () => {
    h.clock.now = Date.now() - 25 * 3600 * 1000;
    const old = await post(acc.adminKey, { title: 'Old', type: 'note' }, 'key-5');
    h.clock.now = null;
    const fresh = await post(acc.adminKey, { title: 'Old', type: 'note' }, 'key-5');
    assert.equal(fresh.status, 201);
    assert.equal(fresh.headers['idempotent-replayed'], undefined);
    assert.notEqual(fresh.body.data.id, old.body.data.id);
  });

  it('scopes keys to the account', async () => {
    const other = await h.account('enterprise');
    const mine = await post(acc.adminKey, { title: 'Shared key', type: 'note' }, 'key-6');
    const theirs = await post(other.adminKey, { title: 'Shared key', type: 'note' }, 'key-6');
    assert.equal(theirs.status, 201);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    assert.notEqual(theirs.body.data.id, mine.body.data.id);
  });

  it('scopes keys to the API key: another user, or a narrower key, never gets a replay', async () => {
    const member = await acc.user('member', ['read', 'write']);
    const body = { scopes: ['read', 'write', 'admin'] };
    const headers = { 'idempotency-key': 'key-8' };
    const admins = await h.request('POST', '/v1/api-keys', { key: acc.adminKey, body, headers });
    assert.equal(admins.status, 201);
    // The member lacks `admin`: with the admin's Idempotency-Key it gets its own run, a 403, not
    // the admin's new key.
    const members = await h.request('POST', '/v1/api-keys', { key: member.key, body, headers });
    assert.equal(members.status, 403);
    assert.equal(members.headers['idempotent-replayed'], undefined);
    assert.ok(!members.raw.includes(admins.body.data.key));
    // A second key of the admin's own, read-only, gets its own run too.
    const readOnly = await h.request('POST', '/v1/api-keys', {
      key: acc.adminKey,
      body: { scopes: ['read'] },
    });
    const narrow = await h.request('POST', '/v1/api-keys', { key: readOnly.body.data.key, body, headers });
    assert.equal(narrow.status, 403);
    assert.equal(narrow.headers['idempotent-replayed'], undefined);
    // A write with the same header from the member runs once for the member.
    const a = await post(acc.adminKey, { title: 'Per key', type: 'note' }, 'key-9');
    const b = await post(member.key, { title: 'Per key', type: 'note' }, 'key-9');
    assert.equal(b.status, 201);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.notEqual(b.body.data.id, a.body.data.id);
    const again = await post(member.key, { title: 'Per key', type: 'note' }, 'key-9');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.id, b.body.data.id);
  });

  it('does not store a 400 the service gave (validation): the corrected request runs', async () => {
    const blank = await post(acc.adminKey, { title: '   ', type: 'note' }, 'key-10');
    assert.equal(blank.status, 400);
    assert.equal(blank.body.error.code, 'invalid_request');
    const fixed = await post(acc.adminKey, { title: 'Not blank', type: 'note' }, 'key-10');
    assert.equal(fixed.status, 201);
    assert.equal(fixed.headers['idempotent-replayed'], undefined);
  });

  it('does not claim a key on an unknown path', async () => {
    const nowhere = await h.request('POST', '/v1/nope', {
      key: acc.adminKey,
      body: { title: 'x' },
      headers: { 'idempotency-key': 'key-11' },
    });
    assert.equal(nowhere.status, 404);
    const real = await post(acc.adminKey, { title: 'After a 404', type: 'note' }, 'key-11');
    assert.equal(real.status, 201);
    assert.equal(real.headers['idempotent-replayed'], undefined);
  });

  it('refuses a malformed key with 400 invalid_request', async () => {
    for (const bad of ['', 'has space', 'x'.repeat(256)]) {
      const res = await post(acc.adminKey, { title: 't', type: 'note' }, bad);
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  it('keeps a replayed API key secret at rest: the stored response is sealed', async () => {
    const res = await h.request('POST', '/v1/api-keys', {
      key: acc.adminKey,
      body: { scopes: ['read'] },
      headers: { 'idempotency-key': 'key-7' },
    });
    assert.equal(res.status, 201);
    const again = await h.request('POST', '/v1/api-keys', {
      key: acc.adminKey,
      body: { scopes: ['read'] },
      headers: { 'idempotency-key': 'key-7' },
    });
    assert.equal(again.body.data.key, res.body.data.key);
    const rows = await sql<{ sealed_response: string }>`select sealed_response from idempotency_keys`.execute(
      h.database.db,
    );
    assert.ok(rows.rows.length > 0);
    assert.ok(rows.rows.every((r) => !r.sealed_response?.includes(res.body.data.key)));
    // Nor can the database and the secret key together give it back (decisions §3: keys are
    // stored only as a hash): the answer is sealed again under the sending key, which is hashed.
    const box = secretBoxFor(h.config);
    const opened = rows.rows.filter((r) => r.sealed_response).map((r) => box.open(r.sealed_response));
    assert.ok(opened.length > 0);
    for (const text of opened)
      assert.ok(!text.includes(res.body.data.key), 'no key under the secret key alone');
    const stored = await sql<{ sealed_response: string }>`select sealed_response from idempotency_keys
      where account_id = ${acc.id} and key like ${'% key-7'}`.execute(h.database.db);
    const outer = JSON.parse(box.open(stored.rows[0]!.sealed_response)) as { body: string };
    assert.throws(() => answerBox(box, 'ads_a-guessed-or-other-key').open(outer.body));
    assert.match(answerBox(box, acc.adminKey).open(outer.body), new RegExp(res.body.data.key));
  });

  it('still replays an answer stored before answers were sealed under the sending key', async () => {
    const body = { title: 'Stored the old way', type: 'note' };
    const first = await post(acc.adminKey, body, 'key-legacy-seal');
    assert.equal(first.status, 201);
    const box = secretBoxFor(h.config);
    const legacy = box.seal(JSON.stringify({ body: first.raw, type: 'application/json; charset=utf-8' }));
    await sql`UPDATE idempotency_keys SET sealed_response = ${legacy}
      WHERE account_id = ${acc.id} AND key LIKE ${'% key-legacy-seal'}`.execute(h.database.db);
    const before = await count(acc.id);
    const again = await post(acc.adminKey, body, 'key-legacy-seal');
    assert.equal(again.status, 201, again.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.raw, first.raw);
    assert.equal(await count(acc.id), before);
  });

  it('answers 409, not 500, when the stored answer was sealed under another secret key', async () => {
    const caller = await acc.user('admin', ['read', 'write']);
    const body = { title: 'Sealed elsewhere', type: 'note' };
    const first = await post(caller.key, body, 'key-other-secret');
    assert.equal(first.status, 201);
    // What a process configured with another ADS_SECRET_KEY finds: an answer it cannot open.
    const foreign = createSecretBox(randomBytes(32)).seal(JSON.stringify({ body: first.raw }));
    await sql`UPDATE idempotency_keys SET sealed_response = ${foreign}
      WHERE account_id = ${acc.id} AND key = ${`${caller.keyId} key-other-secret`}`.execute(h.database.db);
    const before = await count(acc.id);
    const again = await post(caller.key, body, 'key-other-secret');
    assert.equal(again.status, 409, again.raw);
    assert.equal(again.body.error.code, 'idempotency_conflict');
    assert.match(again.body.error.message, /already ran \(status 201\)/);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.equal(await count(acc.id), before, 'the request did not run twice');
  });

  /** The bare SHA-256 of a request as stored before keyed fingerprints (a flat body's keys sorted). */
  const bareHash = (path: string, body: Record<string, unknown>) =>
    createHash('sha256')
      .update(`POST ${path}\n${JSON.stringify(Object.fromEntries(Object.entries(body).sort()))}`)
      .digest('hex');
  const storedPrint = async (keyId: string, idem: string) =>
    (
      await sql<{ fingerprint: string }>`SELECT fingerprint FROM idempotency_keys
        WHERE account_id = ${acc.id} AND key = ${`${keyId} ${idem}`}`.execute(h.database.db)
    ).rows[0]!.fingerprint;

  it('stores no bare hash of a request that holds a secret: its fingerprint is keyed', async () => {
    const caller = await acc.user('admin', ['read', 'write', 'admin']);
    const body = { url: 'https://example.com/idem-hook', events: ['*'], secret: 'hunter2' };
    const res = await h.request('POST', '/v1/webhooks', {
      key: caller.key,
      body,
      headers: { 'idempotency-key': 'key-webhook' },
    });
    assert.equal(res.status, 201, res.raw);
    const print = await storedPrint(caller.keyId, 'key-webhook');
    assert.match(print, /^k1\.[A-Za-z0-9_-]{43}$/);
    // A guess of the secret, hashed with what is stored in clear, does not meet the stored print.
    assert.notEqual(print, bareHash('/v1/webhooks', body));
    const again = await h.request('POST', '/v1/webhooks', {
      key: caller.key,
      body,
      headers: { 'idempotency-key': 'key-webhook' },
    });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.id, res.body.data.id);
  });

  it('still replays a key stored with a bare SHA-256 fingerprint, and refuses another body for it', async () => {
    const caller = await acc.user('admin', ['read', 'write']);
    const body = { title: 'Stored before keyed prints', type: 'note' };
    const first = await post(caller.key, body, 'key-bare');
    assert.equal(first.status, 201);
    await sql`UPDATE idempotency_keys SET fingerprint = ${bareHash('/v1/data', body)}
      WHERE account_id = ${acc.id} AND key = ${`${caller.keyId} key-bare`}`.execute(h.database.db);
    const again = await post(caller.key, body, 'key-bare');
    assert.equal(again.status, 201, again.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.id, first.body.data.id);
    const other = await post(caller.key, { ...body, title: 'Another' }, 'key-bare');
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'idempotency_conflict');
  });

  it('replays a request to an operation that takes no body, sent with none, null or {}', async () => {
    const invited = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'resend-bodies@example.com', role: 'member' },
    });
    const resend = (body?: unknown) =>
      h.request('POST', `/v1/users/${invited.body.data.id}/invitation`, {
        key: acc.adminKey,
        body,
        headers: { 'idempotency-key': 'key-no-body' },
      });
    const first = await resend();
    assert.equal(first.status, 200, first.raw);
    for (const body of [null, {}]) {
      const again = await resend(body);
      assert.equal(again.status, 200, `${JSON.stringify(body)}: ${again.raw}`);
      assert.equal(again.headers['idempotent-replayed'], 'true');
    }
  });

  it('replays the same body re-sent with its keys in another order', async () => {
    const first = await post(
      acc.adminKey,
      { title: 'Ordered', type: 'note', metadata: { a: '1', b: '2' } },
      'key-ord',
    );
    const again = await post(
      acc.adminKey,
      { metadata: { b: '2', a: '1' }, type: 'note', title: 'Ordered' },
      'key-ord',
    );
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.id, first.body.data.id);
  });

  it('runs a retry again once the run holding its key was abandoned before its change committed', async () => {
    const caller = await acc.user('admin', ['read', 'write']);
    const body = { title: 'After a crash', type: 'note' };
    // What a process that crashed mid-request, before its transaction committed, leaves: a running
    // claim, not marked committed, and no answer (the object below stands for nothing of it).
    const first = await post(caller.key, body, 'key-crash');
    assert.equal(first.status, 201);
    await sql`UPDATE idempotency_keys SET status = 'running', response_status = NULL,
      sealed_response = NULL, claim = 'crashed-run', committed = 0
      WHERE account_id = ${acc.id} AND key = ${`${caller.keyId} key-crash`}`.execute(h.database.db);
    try {
      h.clock.now = Date.now() + abandonedAfterMs(h.config.webhook.timeoutMs) + 1000;
      const before = await count(acc.id);
      const retried = await post(caller.key, body, 'key-crash');
      assert.equal(retried.status, 201, retried.raw);
      assert.equal(retried.headers['idempotent-replayed'], undefined);
      assert.equal(await count(acc.id), before + 1, 'the abandoned request ran again');
      // The abandoned run, if it were still alive, can no longer overwrite the new answer.
      await completeIdempotencyKey(
        h.database.db,
        acc.id,
        `${caller.keyId} key-crash`,
        'crashed-run',
        500,
        'x',
      );
      const replay = await post(caller.key, body, 'key-crash');
      assert.equal(replay.status, 201);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body.data.id, retried.body.data.id);
    } finally {
      h.clock.now = null;
    }
  });

  // A crash after the change committed but before the answer was stored: the claim was marked
  // committed in the change's own transaction, so a retry never runs the request a second time.
  it('never runs a request again whose change committed before its answer was lost', async () => {
    const caller = await acc.user('admin', ['read', 'write', 'admin']);
    const hookUrl = 'https://example.com/idem-crash';
    const invited = await h.request('POST', '/v1/users', {
      key: caller.key,
      body: { email: 'idem-resend@example.com', role: 'member' },
    });
    assert.equal(invited.status, 201);
    const invitedId = invited.body.data.id as string;
    const accepting = await h.request('POST', '/v1/users', {
      key: caller.key,
      body: { email: 'idem-accept@example.com', role: 'member' },
    });
    const token = await liveInvitationToken(h.database.db, acc.id, accepting.body.data.id);
    const cases = [
      { path: '/v1/data', body: { title: 'Committed once', type: 'note' }, table: 'data_objects', ok: 201 },
      {
        path: '/v1/webhooks',
        body: { url: hookUrl, events: ['*'], secret: 's3cret-value' },
        table: 'webhooks',
        ok: 201,
      },
      { path: '/v1/api-keys', body: { name: 'idem', scopes: ['read'] }, table: 'api_keys', ok: 201 },
      {
        path: '/v1/users',
        body: { email: 'idem-crash@example.com', role: 'member' },
        table: 'users',
        ok: 201,
      },
      { path: `/v1/users/${invitedId}/invitation`, body: undefined, table: 'invitations', ok: 200 },
      // No API key: the key is the invitation token's. Run again, it would be 400 invalid_token.
      { path: '/v1/invitations/accept', body: { token }, table: 'api_keys', ok: 200, anonymous: true },
    ];
    for (const [i, c] of cases.entries()) {
      const idem = `key-committed-${i}`;
      const send = () =>
        h.request('POST', c.path, {
          key: c.anonymous ? undefined : caller.key,
          body: c.body,
          headers: { 'idempotency-key': idem },
        });
      const stored = sql`account_id = ${acc.id} AND key LIKE ${`% ${idem}`}`;
      const rows = async () =>
        Number(
          (
            await sql<{
              n: number;
            }>`SELECT count(*) AS n FROM ${sql.table(c.table)} WHERE account_id = ${acc.id}`.execute(
              h.database.db,
            )
          ).rows[0]?.n,
        );
      const first = await send();
      assert.equal(first.status, c.ok, `${c.path}: ${first.raw}`);
      const marked = await sql<{ committed: number }>`SELECT committed FROM idempotency_keys
        WHERE ${stored}`.execute(h.database.db);
      assert.deepEqual(
        marked.rows.map((r) => Number(r.committed)),
        [1],
        `${c.path}: marked in the change's transaction`,
      );
      // The answer lost: the run's process stopped after its COMMIT, before storing it.
      await sql`UPDATE idempotency_keys SET status = 'running', response_status = NULL,
        sealed_response = NULL, claim = 'crashed-run' WHERE ${stored}`.execute(h.database.db);
      const before = await rows();
      try {
        h.clock.now = Date.now() + abandonedAfterMs(h.config.webhook.timeoutMs) + 1000;
        const retried = await send();
        assert.equal(retried.status, 409, `${c.path}: ${retried.raw}`);
        assert.equal(retried.body.error.code, 'idempotency_conflict');
        assert.match(retried.body.error.message, /was carried out, but its answer was lost/);
        assert.equal(await rows(), before, `${c.path}: not run a second time`);
      } finally {
        h.clock.now = null;
      }
    }
  });

  it('a slow run whose key a retry took over changes nothing: its mark finds no claim', async () => {
    const before = await count(acc.id);
    // Run A's claim was released and the key re-claimed by run B (abandonment), so A's claim token
    // matches no row when A's transaction comes to mark it.
    await sql`INSERT INTO idempotency_keys (account_id, key, fingerprint, status, created_at, claim)
      VALUES (${acc.id}, 'k taken-over', 'f', 'running', ${new Date().toISOString()}, 'run-B')`.execute(
      h.database.db,
    );
    await assert.rejects(
      createData(
        h.ctx,
        acc.id,
        { title: 'Late run', type: 'note' },
        { accountId: acc.id, key: 'k taken-over', claim: 'run-A' },
      ),
      (err: AppError) => err.code === 'idempotency_conflict',
    );
    assert.equal(await count(acc.id), before, 'run A made no object');
  });

  it('a keyed request refused after its claim (409 email_taken) is stored with its claim uncommitted', async () => {
    const caller = await acc.user('admin', ['read', 'write', 'admin']);
    const body = { email: 'dup-idem@example.com', role: 'member' };
    assert.equal((await h.request('POST', '/v1/users', { key: caller.key, body })).status, 201);
    const taken = await h.request('POST', '/v1/users', {
      key: caller.key,
      body,
      headers: { 'idempotency-key': 'key-taken' },
    });
    assert.equal(taken.status, 409);
    const row = await sql<{
      committed: number;
      status: string;
    }>`SELECT committed, status FROM idempotency_keys
      WHERE account_id = ${acc.id} AND key = ${`${caller.keyId} key-taken`}`.execute(h.database.db);
    // Its transaction rolled back, and the mark with it.
    assert.deepEqual(
      row.rows.map((r) => [r.status, Number(r.committed)]),
      [['done', 0]],
    );
  });

  it('deletes stored answers once they are older than 24 hours', async () => {
    h.clock.now = Date.now() - 25 * 3600 * 1000;
    assert.equal((await post(acc.adminKey, { title: 'Old', type: 'note' }, 'key-old')).status, 201);
    h.clock.now = null;
    assert.equal((await post(acc.adminKey, { title: 'New', type: 'note' }, 'key-new')).status, 201);
    const keys = async () =>
      (
        await sql<{ key: string }>`SELECT key FROM idempotency_keys WHERE account_id = ${acc.id}`.execute(
          h.database.db,
        )
      ).rows.map((r) => r.key.split(' ')[1]);
    assert.ok((await keys()).includes('key-old'));
    const purger = createIdempotencyPurger(h.ctx);
    try {
      assert.ok((await purger.purge()) >= 1);
    } finally {
      await purger.stop();
    }
    const left = await keys();
    assert.ok(!left.includes('key-old'), left.join());
    assert.ok(left.includes('key-new'), left.join());
  });
});
