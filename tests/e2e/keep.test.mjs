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

import { serverBinary, sleep } from './lib.mjs';

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
  for (let i = 0; i < 200 && alive(pid); i++) await sleep(50);
  assert.ok(!alive(pid), `server ${pid} did not exit`);
}

function containers(state) {
  const root = path.join(state, 'runtime-runc');
  if (!fs.existsSync(root)) return [];
  return execFileSync('runc', ['--root', root, 'list', '-q'], { encoding: 'utf8' })
    .split('\n').filter(Boolean);
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
      await stop(s, 'eof');
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
