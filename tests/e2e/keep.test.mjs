// Issue 13 point 2: sessions that outlive the server (--keep-sessions). A server that stops
// (stdin EOF, SIGTERM, SIGKILL) leaves its stdio sessions' sandboxes running; the next one
// on the same state dir re-adopts them: variables, names, counts and tokens survive.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { serverBinary, sleep, startHttpServer } from './lib.mjs';

// Servers started and not seen to exit: a failed test kills them before its clean-up.
const live = new Set();

// Starts a server on STATE with ARGS; returns { client, transport, pid, stderr(), exited }.
async function start(state, args = ['--keep-sessions', 'on']) {
  const transport = new StdioClientTransport({
    command: serverBinary(),
    args: ['mcp', '--state-dir', state, ...args],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c) => { stderr += c.toString('utf8'); });
  const client = new Client({ name: 'keep-e2e', version: '0' }, { capabilities: {} });
  await client.connect(transport, { timeout: 30000 });
  const pid = transport.pid;
  live.add(pid);
  return { client, transport, pid, stderr: () => stderr };
}

const call = async (client, name, args) => {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  return r.structuredContent;
};

function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

async function waitGone(pid) {
  // Up to a minute: a server stopping its sandboxes on a loaded machine (a parallel run).
  for (let i = 0; i < 1200 && alive(pid); i++) await sleep(50);
  assert.ok(!alive(pid), `server ${pid} did not exit`);
  live.delete(pid);
}

function containers(state) {
  const root = path.join(state, 'runtime-runc');
  if (!fs.existsSync(root)) return [];
  // `runc list` fails when a container's state goes while it lists (a delete under way, as
  // after close_session): ask again, a few times.
  for (let i = 0; ; i++) {
    try {
      return execFileSync('runc', ['--root', root, 'list', '-q'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
        .split('\n').filter(Boolean);
    } catch (e) {
      if (i >= 20 || !/no such file or directory/.test(String(e.stderr))) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}

function sessionDirs(state) {
  const inst = path.join(state, 'instances');
  if (!fs.existsSync(inst)) return [];
  return fs.readdirSync(inst).flatMap((i) => {
    const s = path.join(inst, i, 'sessions');
    return fs.existsSync(s) ? fs.readdirSync(s) : [];
  });
}

// Ends a server as HOW says: 'eof' (the client closes stdin), 'term' or 'kill'.
async function stop(server, how) {
  if (how === 'eof') {
    server.transport._process?.stdin?.end();
    await waitGone(server.pid);
  } else {
    process.kill(server.pid, how === 'term' ? 'SIGTERM' : 'SIGKILL');
    await waitGone(server.pid);
  }
  await server.client.close().catch(() => {});
}

// Removes everything: a server without keeping on the same state dir reaps what was kept.
async function cleanup(state) {
  for (const pid of live) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    await waitGone(pid);
  }
  const s = await start(state, ['--keep-sessions', 'off']);
  await s.client.close();
  await waitGone(s.pid);
  assert.deepEqual(containers(state), [], 'no sandbox is left after the clean-up');
  fs.rmSync(state, { recursive: true, force: true });
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'cg-keep-'));

for (const how of ['eof', 'term', 'kill']) {
  test(`a session outlives its server (${how}): a = 41 before, print(a + 1) after prints 42`, async () => {
    const state = tmp();
    try {
      let s = await start(state);
      const started = await call(s.client, 'start_session', { language: 'python', name: 'calc' });
      const sid = started.session_id;
      let r = await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
      assert.equal(r.success, true, JSON.stringify(r));
      await stop(s, how);
      assert.equal(containers(state).length, 1, 'the sandbox is left running');
      // The record and the kernel's key are the host's: 0600, outside what the sandbox writes.
      const [slot] = sessionDirs(state);
      const inst = fs.readdirSync(path.join(state, 'instances'))[0];
      const dir = path.join(state, 'instances', inst, 'sessions', slot);
      assert.equal(fs.statSync(path.join(dir, 'record.json')).mode & 0o777, 0o600);
      assert.equal(fs.statSync(path.join(dir, 'bundle', 'kernel-python.key')).mode & 0o777, 0o600);
      assert.equal(fs.statSync(path.join(dir, 'bundle')).uid, 0);

      s = await start(state);
      const listed = (await call(s.client, 'list_sessions', {})).sessions;
      assert.equal(listed.length, 1, JSON.stringify(listed));
      assert.equal(listed[0].session_id, sid);
      assert.equal(listed[0].name, 'calc');
      assert.equal(listed[0].executions_count, 1);
      r = await call(s.client, 'send_to_session', { session_id: sid, code: 'print(a + 1)' });
      assert.equal(r.stdout.trim(), '42', `${JSON.stringify(r)}\n${s.stderr()}`);
      assert.equal(r.kernel_restarted, false);
      const after = (await call(s.client, 'list_sessions', {})).sessions;
      assert.equal(after[0].executions_count, 2, 'the count continues');
      assert.equal(containers(state).length, 1, 'the same sandbox, no second one');
      await call(s.client, 'send_to_session', { session_id: sid, code: 'a += 1' });
      await stop(s, how);

      // Kept again by the server that adopted it; closing it then removes it.
      s = await start(state);
      r = await call(s.client, 'send_to_session', { session_id: sid, code: 'print(a)' });
      assert.equal(r.stdout.trim(), '42', `${JSON.stringify(r)}\n${s.stderr()}`);
      r = await call(s.client, 'close_session', { session_id: sid });
      assert.equal(r.success, true, JSON.stringify(r));
      for (let i = 0; i < 100 && containers(state).length; i++) await sleep(100);
      assert.deepEqual(containers(state), [], 'a closed adopted session leaves no sandbox');
      await stop(s, 'eof');
      assert.deepEqual(sessionDirs(state), [], 'nothing is kept once it was closed');
    } finally {
      await cleanup(state);
    }
  });
}

test('a kept session whose kernel was killed while no server ran gets a lost-state note', async () => {
  const state = tmp();
  try {
    let s = await start(state);
    const sid = (await call(s.client, 'start_session', { language: 'python' })).session_id;
    await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    const pid = (await call(s.client, 'list_sessions', {})).sessions[0].pid;
    assert.ok(pid > 0);
    await stop(s, 'eof');
    process.kill(pid, 'SIGKILL');
    await sleep(200);

    s = await start(state);
    const r = await call(s.client, 'send_to_session', {
      session_id: sid, code: 'print(globals().get("a", "gone"))' });
    assert.equal(r.stdout.trim(), 'gone', JSON.stringify(r));
    assert.equal(r.kernel_restarted, true);
    assert.match(JSON.stringify(r), /could not be taken over/);
    const again = await call(s.client, 'send_to_session', { session_id: sid, code: 'print(1 + 1)' });
    assert.equal(again.stdout.trim(), '2', 'the fresh kernel works');
    assert.equal(again.kernel_restarted, false);
    await stop(s, 'eof');
  } finally {
    await cleanup(state);
  }
});

test('without --keep-sessions the sandbox goes with the server', async () => {
  const state = tmp();
  try {
    const s = await start(state, []);
    const sid = (await call(s.client, 'start_session', { language: 'python' })).session_id;
    await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    assert.equal(containers(state).length, 1);
    await stop(s, 'eof');
    assert.deepEqual(containers(state), []);
    assert.deepEqual(sessionDirs(state), []);
  } finally {
    await cleanup(state);
  }
});

test('other sandbox settings: the kept sandbox is removed and the session says its state is lost', async () => {
  const state = tmp();
  try {
    let s = await start(state);
    const sid = (await call(s.client, 'start_session', { language: 'python', name: 'n' })).session_id;
    await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    await stop(s, 'term');
    const before = containers(state);
    assert.equal(before.length, 1);

    s = await start(state, ['--keep-sessions', 'on', '--memory-mb', '768']);
    assert.ok(!containers(state).includes(before[0]), 'the old sandbox was removed');
    const listed = (await call(s.client, 'list_sessions', {})).sessions;
    assert.equal(listed.length, 1);
    assert.equal(listed[0].name, 'n');
    const r = await call(s.client, 'send_to_session', {
      session_id: sid, code: 'print(globals().get("a", "gone"))' });
    assert.equal(r.stdout.trim(), 'gone');
    assert.equal(r.kernel_restarted, true);
    assert.match(JSON.stringify(r), /other sandbox settings/);
    await stop(s, 'eof');
  } finally {
    await cleanup(state);
  }
});

test('the idle TTL runs on while no server runs: a kept session past it is closed at adoption', async () => {
  const state = tmp();
  try {
    const args = ['--keep-sessions', 'on', '--idle-ttl', '3'];
    let s = await start(state, args);
    const sid = (await call(s.client, 'start_session', { language: 'python' })).session_id;
    await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    await stop(s, 'eof');
    assert.equal(containers(state).length, 1);
    await sleep(4000);
    s = await start(state, args);
    for (let i = 0; i < 100 && containers(state).length; i++) await sleep(100);
    assert.deepEqual(containers(state), [], 'the expired session was closed');
    assert.deepEqual((await call(s.client, 'list_sessions', {})).sessions, []);
    await stop(s, 'eof');
  } finally {
    await cleanup(state);
  }
});

test('a one-shot sandbox running at the crash is removed; the kept session is adopted', async () => {
  const state = tmp();
  try {
    let s = await start(state);
    const sid = (await call(s.client, 'start_session', { language: 'python' })).session_id;
    await call(s.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    const slow = call(s.client, 'execute_code', { language: 'bash', code: 'sleep 60' }).catch(() => {});
    for (let i = 0; i < 600 && containers(state).length < 2; i++) await sleep(100);
    assert.equal(containers(state).length, 2, 'the one-shot sandbox runs');
    await stop(s, 'kill');
    await slow;
    s = await start(state);
    assert.equal(containers(state).length, 1, 'only the session\'s sandbox is left');
    const listed = (await call(s.client, 'list_sessions', {})).sessions;
    assert.deepEqual(listed.map((x) => x.session_id), [sid], s.stderr());
    const r = await call(s.client, 'send_to_session', { session_id: sid, code: 'print(a + 1)' });
    assert.equal(r.stdout.trim(), '42', JSON.stringify(r));
    await stop(s, 'eof');
  } finally {
    await cleanup(state);
  }
});

test('HTTP sessions are never kept, even with --keep-sessions on: their owner dies with the server', async () => {
  const server = await startHttpServer({ args: ['--keep-sessions', 'on'] });
  let pid;
  try {
    const { client } = await server.connect();
    const sid = (await call(client, 'start_session', { language: 'python' })).session_id;
    await call(client, 'send_to_session', { session_id: sid, code: 'a = 41' });
    pid = (await call(client, 'list_sessions', {})).sessions[0].pid;
    assert.ok(pid > 0 && alive(pid));
  } finally {
    await server.close();
  }
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
  assert.ok(!alive(pid), 'the session\'s kernel went with the server');
  assert.doesNotMatch(server.stderrText(), /left \d+ session\(s\) running/);
});

test('with a warm pool: the claimed session is kept, the waiting pool sandboxes are not', async () => {
  const state = tmp();
  const pool = ['--keep-sessions', 'on', '--pool', 'python=1,bash=1'];
  try {
    let s = await start(state, pool);
    for (let i = 0; i < 1200 && containers(state).length < 2; i++) await sleep(100);
    assert.equal(containers(state).length, 2, 'the pool is warm');
    const r = await call(s.client, 'execute_code', { language: 'python', session_id: 'sess_keeppool', code: 'a = 41' });
    assert.equal(r.status, 'success', JSON.stringify(r));
    const claimed = containers(state);
    await stop(s, 'eof');
    const left = containers(state);
    assert.equal(left.length, 1, `only the session's sandbox is left: ${left}`);
    assert.ok(claimed.includes(left[0]), 'it is the sandbox the session claimed from the pool');
    s = await start(state, pool);
    const after = await call(s.client, 'execute_code', { language: 'python', session_id: 'sess_keeppool', code: 'print(a + 1)' });
    assert.equal(after.stdout, '42\n', JSON.stringify(after));
    await call(s.client, 'close_session', { session_id: 'sess_keeppool' });
    await stop(s, 'eof');
    assert.deepEqual(containers(state), [], 'nothing left once closed and stopped');
  } finally {
    await cleanup(state);
  }
});

test("another live server's periodic sweep leaves a kept instance to the next server", async () => {
  const state = tmp();
  let sweeper;
  try {
    sweeper = await start(state, ['--keep-sessions', 'off', '--cleanup-interval', '0.02']);
    let s = await start(state);
    const r = await call(s.client, 'execute_code', { language: 'python', session_id: 'sess_keepsweep', code: 'a = 41' });
    assert.equal(r.status, 'success', JSON.stringify(r));
    await stop(s, 'eof');
    await sleep(4000); // three sweeps of the live server
    assert.equal(containers(state).length, 1, 'the kept sandbox survives the sweeps');
    s = await start(state);
    const after = await call(s.client, 'execute_code', { language: 'python', session_id: 'sess_keepsweep', code: 'print(a + 1)' });
    assert.equal(after.stdout, '42\n', JSON.stringify(after));
    await call(s.client, 'close_session', { session_id: 'sess_keepsweep' });
    await stop(s, 'eof');
  } finally {
    if (sweeper) await stop(sweeper, 'eof');
    await cleanup(state);
  }
});
