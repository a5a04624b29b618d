// Issue 12, points 1 and 3: sandboxes of HTTP clients that went away without DELETE are
// released after --client-grace; max_sessions says what holds the slots; one-shot runs
// have slots of their own past --max-sessions; the operator lists and closes any sandbox
// at /admin/sessions; a call right after a cancelled one waits for the stop.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { callExec, isBusy, sc, sleep, startHttpServer, startServer } from './lib.mjs';

const LONG = { timeout: 120000 };
const run = (client, args) => client.callTool({ name: 'execute_code', arguments: args }, undefined, LONG);

test('a client gone without DELETE frees its sandboxes after the grace; a live one keeps them; max_sessions names the holders', async () => {
  const server = await startHttpServer({
    args: ['--max-sessions', '1'],
    env: { CELLGATE_CLIENT_GRACE: '2', CELLGATE_ONESHOT_RESERVE: '0' },
  });
  try {
    const a = await server.connect();
    assert.equal(sc(await run(a.client, { language: 'python', session_id: 'mine', code: 'x = 41' })).status, 'success');
    const b = await server.connect();
    const refused = await run(b.client, { language: 'python', code: 'print(1)' });
    assert.equal(sc(refused).error, 'max_sessions');
    assert.match(sc(refused).message, /^Maximum 1 concurrent sessions reached\./);
    assert.match(sc(refused).message, /Held by: 1 sessions of other clients \(idle \d+ s\)/);
    assert.doesNotMatch(sc(refused).message, /mine/, 'another client\'s session id is not shown');
    const own = await run(a.client, { language: 'python', session_id: 'other', code: '1' });
    assert.match(sc(own).message, /Held by: 1 of your sessions \(mine idle \d+ s\)/);

    // A connected client (its GET stream open) quiet for longer than the grace keeps its session.
    await sleep(5000);
    const kept = sc(await run(a.client, { language: 'python', session_id: 'mine', code: 'print(x + 1)' }));
    assert.equal(kept.stdout, '42\n', JSON.stringify(kept));

    // Gone without DELETE (the SDK's close() sends none): its sandbox is released.
    await a.client.close();
    let last;
    for (let i = 0; i < 60; i++) {
      last = sc(await run(b.client, { language: 'python', code: 'print(1)' }));
      if (last.status === 'success') break;
      assert.equal(last.error, 'max_sessions', JSON.stringify(last));
      await sleep(500);
    }
    assert.equal(last.stdout, '1\n', JSON.stringify(last));
    assert.match(server.stderrText(), /ending MCP session [0-9a-f]{8}… \(client 'cellgate-e2e-http'\): no request for \d+ s, no call in flight and no open GET stream; closing its sessions mine/);
  } finally {
    await server.close();
  }
});

test('one-shot runs are not starved by idle sessions: they have --oneshot-reserve slots past --max-sessions', async () => {
  const server = await startServer({ name: 'abandon-oneshot', args: ['--max-sessions', '2', '--http-listen', 'off'] });
  try {
    for (const id of ['s1', 's2'])
      assert.equal(sc(await run(server.client, { language: 'bash', session_id: id, code: 'true' })).status, 'success');
    const third = sc(await run(server.client, { language: 'bash', session_id: 's3', code: 'true' }));
    assert.equal(third.error, 'max_sessions', 'sessions stay limited');
    const oneshot = sc(await run(server.client, { language: 'python', code: 'print(6 * 7)' }));
    assert.equal(oneshot.stdout, '42\n', JSON.stringify(oneshot));
  } finally {
    await server.close();
  }
});

test('the operator lists and closes any sandbox at /admin/sessions, with the token', async () => {
  const token = 'admin-test-token-0123456789';
  const adminToken = 'the-operators-own-token-0123456789';
  const server = await startHttpServer({ args: ['--http-token', token, '--admin-token', adminToken] });
  const auth = { Authorization: `Bearer ${token}` };
  const adminAuth = { Authorization: `Bearer ${adminToken}` };
  const admin = (method, path = '', headers = adminAuth) =>
    fetch(`${server.origin}/admin/sessions${path}`, { method, headers });
  try {
    const a = await server.connect({ headers: auth });
    assert.equal(sc(await run(a.client, { language: 'python', session_id: 'held', code: 'y = 1' })).status, 'success');

    assert.equal((await admin('GET', '', {})).status, 401, 'no token');
    assert.equal((await admin('GET', '', { Authorization: 'Bearer wrong' })).status, 401, 'wrong token');
    assert.equal((await admin('GET', '', { ...adminAuth, Origin: server.origin })).status, 403, 'a browser page');
    const listed = await admin('GET');
    assert.equal(listed.status, 200);
    const body = await listed.json();
    assert.equal(body.max_sessions, 10);
    assert.equal(body.sessions.length, 1);
    const [s] = body.sessions;
    assert.equal(s.session_id, 'held');
    assert.equal(s.language, 'python');
    assert.match(s.slot, /^[0-9a-f]{12}$/);
    assert.match(s.owner, /^[0-9a-f]{8}$/, 'the owner is cut: an Mcp-Session-Id is a credential');

    assert.equal((await admin('DELETE', `/${s.slot}`, {})).status, 401);
    assert.equal((await admin('DELETE', '/000000000000')).status, 404);
    const closed = await admin('DELETE', `/${s.slot}`);
    assert.equal(closed.status, 200);
    assert.deepEqual(await closed.json(), { closed: s.slot, session_id: 'held' });
    assert.deepEqual((await (await admin('GET')).json()).sessions, []);
    const mine = sc(await a.client.callTool({ name: 'list_sessions', arguments: {} }, undefined, LONG));
    assert.deepEqual(mine.sessions, []);
    assert.match(server.stderrText(), /admin: closing session held/);
  } finally {
    await server.close();
  }
});

test('a call right after notifications/cancelled on the same session waits for the stop instead of session_busy', async () => {
  const server = await startServer({ name: 'abandon-cancel', args: ['--http-listen', 'off'] });
  try {
    const args = { language: 'python', session_id: 'c1', code: 'z = 5' };
    assert.equal(sc(await callExec(server.client, args)).status, 'success');
    for (let round = 0; round < 3; round++) {
      const ac = new AbortController();
      const slow = callExec(server.client, { ...args, code: 'import time; time.sleep(60)' }, { signal: ac.signal });
      await sleep(1000);
      ac.abort();
      await assert.rejects(slow);
      const next = sc(await callExec(server.client, { ...args, code: 'print(z)' }));
      assert.equal(next.status, 'success', JSON.stringify(next));
      assert.equal(next.stdout, '5\n');
    }
    // A session busy with a run nobody cancelled still answers session_busy at once.
    const slow = callExec(server.client, { ...args, code: 'import time; time.sleep(3)' });
    await sleep(500);
    const busy = await callExec(server.client, { ...args, code: 'print(z)' });
    assert.ok(isBusy(busy), JSON.stringify(busy));
    assert.equal(sc(await slow).status, 'success');
  } finally {
    await server.close();
  }
});
