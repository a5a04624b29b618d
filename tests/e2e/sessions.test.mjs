// Session tools of seeds 002 and 004 through the MCP SDK client: start/send/close/list,
// run_python with generated session ids and run ids, busy, max sessions, idle TTL.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO_ROOT, serverBinary, startServer, sleep } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer({ name: 'sessions' });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args, timeout = 120000) => client.callTool({ name, arguments: args }, undefined, { timeout });
const sc = (r) => r.structuredContent;

test('tools/list serves every session tool with input and output schemas', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  for (const name of ['close_session', 'execute_code', 'list_sessions', 'run_python', 'send_to_session', 'start_session'])
    assert.ok(names.includes(name), `missing ${name}`);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.outputSchema.type, 'object', t.name);
  }
});

test('start_session, send_to_session keeps state, list_sessions, close_session', async () => {
  const started = await call('start_session', { language: 'python', name: 'analysis' });
  assert.equal(started.isError, false, JSON.stringify(started));
  const s = sc(started);
  assert.match(s.session_id, /^sess_[0-9a-f]{12}$/);
  assert.equal(s.language, 'python');
  assert.equal(s.name, 'analysis');
  assert.ok(Number.isInteger(s.pid) && s.pid > 0, 'pid of the kernel');
  assert.match(s.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  let r = await call('send_to_session', { session_id: s.session_id, code: 'x = 5' });
  assert.equal(sc(r).status, 'success');
  r = await call('send_to_session', { session_id: s.session_id, code: 'print(x * 2)' });
  assert.equal(sc(r).stdout, '10\n');
  assert.equal(sc(r).success, true);
  assert.equal(sc(r).session_id, s.session_id);
  assert.equal(sc(r).truncated, false);
  assert.deepEqual(sc(r).artifacts, []);
  assert.match(sc(r).execution_id, /^exec_[0-9a-f]{12}$/);

  const listed = sc(await call('list_sessions', {})).sessions.find((x) => x.session_id === s.session_id);
  assert.ok(listed, 'listed');
  assert.equal(listed.name, 'analysis');
  assert.equal(listed.language, 'python');
  assert.equal(listed.executions_count, 2);
  assert.equal(listed.pid, s.pid);
  assert.ok(typeof listed.memory_mb === 'number' && listed.memory_mb > 1, `memory_mb ${listed.memory_mb}`);
  assert.deepEqual(listed.packages_installed, []);
  assert.ok(listed.last_activity_at >= listed.started_at);

  const closed = await call('close_session', { session_id: s.session_id });
  assert.equal(closed.isError, false);
  assert.equal(sc(closed).status, 'closed');
  assert.equal(sc(closed).success, true);
  assert.equal(sc(closed).executions_count, 2);
  assert.ok(Number.isInteger(sc(closed).duration_total_ms));

  const again = await call('close_session', { session_id: s.session_id });
  assert.equal(again.isError, true);
  assert.equal(sc(again).error, 'session_not_found');
  assert.equal(sc(again).message, `No active session with id ${s.session_id}`);
  const gone = await call('send_to_session', { session_id: s.session_id, code: 'print(1)' });
  assert.equal(sc(gone).error, 'session_not_found');
  assert.ok(!sc(await call('list_sessions', {})).sessions.some((x) => x.session_id === s.session_id));
});

test('start_session explains that working_dir is not a host path', async () => {
  const r = await call('start_session', { language: 'python', working_dir: '/home/alice/project' });
  assert.equal(r.isError, true);
  assert.match(sc(r).message, /not a host path/);
  const bad = await call('start_session', { language: 'cobol' });
  assert.equal(bad.isError, true);
  assert.equal(sc(bad).error, 'unsupported_language');
  for (const [name, args] of [['start_session', { language: 'python', colour: 'red' }], ['list_sessions', { all: true }],
    ['close_session', { session_id: 'sess_000000000000', force: true }], ['close_session', {}]]) {
    const refused = await call(name, args);
    assert.equal(refused.isError, true, name);
    assert.equal(sc(refused).error, 'invalid_params', `${name} ${JSON.stringify(args)}: ${JSON.stringify(sc(refused))}`);
  }
});

test('run_python generates a session, keeps state and files, and reports timeouts as exit_code -1', async () => {
  const first = await call('run_python', { code: "v = 41\nopen('/mnt/data/f.txt', 'w').write('kept')" });
  const sid = sc(first).session_id;
  assert.match(sid, /^sess_[0-9a-f]{12}$/);
  assert.match(sc(first).run_id, /^run_\d{8}T\d{6}Z_[0-9a-f]{4}$/);
  assert.equal(sc(first).exit_code, 0);
  const second = await call('run_python', { session_id: sid, code: "print(v + 1, open('/mnt/data/f.txt').read())" });
  assert.equal(sc(second).stdout, '42 kept\n');
  assert.notEqual(sc(second).run_id, sc(first).run_id);
  const slow = await call('run_python', { session_id: sid, code: 'while True: pass', timeout: 2 });
  assert.equal(sc(slow).exit_code, -1);
  assert.equal(sc(slow).status, 'timeout');
  assert.match(sc(slow).stderr, /Execution timed out after 2 seconds/, 'seed 004: the timeout is said in stderr');
  const failed = await call('run_python', { session_id: sid, code: "d = {}\nd['sales_amount']" });
  assert.equal(sc(failed).exit_code, 1);
  assert.match(sc(failed).stderr, /KeyError: 'sales_amount'/);
  await call('close_session', { session_id: sid });
});

test('a second run on a busy session gets session_busy with seed 004 message', async () => {
  const first = await call('run_python', { code: 'pass' });
  const sid = sc(first).session_id;
  const slow = call('run_python', { session_id: sid, code: 'import time; time.sleep(4)' });
  await sleep(1000);
  const busy = await call('run_python', { session_id: sid, code: 'print(1)' });
  assert.equal(busy.isError, true);
  assert.equal(sc(busy).error, 'session_busy');
  assert.equal(sc(busy).message, 'A run is already in progress for this session. Wait for it to complete.');
  assert.equal(sc(await slow).exit_code, 0);
  await call('close_session', { session_id: sid });
});

test('max sessions and idle TTL', async () => {
  // The idle TTL must outlast making the second session's sandbox, or the first one is
  // reaped before the third start is refused: 20 s holds on a machine under a parallel run.
  const small = await startServer({ name: 'limits', args: ['--max-sessions', '2', '--idle-ttl', '20', '--oneshot-reserve', '0'] });
  try {
    const c = (name, args) => small.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    const a = sc(await c('start_session', { language: 'python' })).session_id;
    const b = sc(await c('run_python', { code: 'x = 1' })).session_id;
    const third = await c('start_session', { language: 'python' });
    assert.equal(third.isError, true);
    assert.equal(sc(third).error, 'max_sessions');
    assert.match(sc(third).message, /^Maximum 2 concurrent sessions reached\. Close an existing session first\. Held by: 2 of your sessions /);
    const oneshot = await c('execute_code', { language: 'python', code: 'print(1)' });
    assert.equal(sc(oneshot).error, 'max_sessions', 'one-shot sandboxes count too');
    await c('close_session', { session_id: a });
    const fourth = await c('run_python', { code: 'print(2)' });
    assert.equal(sc(fourth).stdout, '2\n');
    // Idle TTL 20 s: both sessions go without being closed by anyone (polled, at most 90 s).
    let left = null;
    for (let i = 0; i < 90; i++) {
      left = sc(await c('list_sessions', {})).sessions;
      if (left.length === 0) break;
      await sleep(1000);
    }
    assert.deepEqual(left, []);
    const late = await c('send_to_session', { session_id: b, code: 'print(x)' });
    assert.equal(sc(late).error, 'session_not_found');
  } finally {
    await small.close();
  }
});

test('a --kernels-dir with no kernel spec is refused at start-up, saying which', () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-nokernels-'));
  try {
    const r = spawnSync(serverBinary(), ['mcp', '--kernels-dir', '/nonexistent/kernels', '--state-dir', state, '--http-listen', 'off'],
      { input: '', encoding: 'utf8', timeout: 30000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /no kernel spec in \/nonexistent\/kernels \(--kernels-dir\)/);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});

test('a sandbox that cannot start gives clear errors and leaves no session behind', async () => {
  // The spec was there at start-up (the catalogue has python) and is gone when a session
  // needs it.
  const kernels = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-kernels-'));
  fs.chmodSync(kernels, 0o755); // the rootless run's server is another user
  fs.mkdirSync(path.join(kernels, 'python'), { mode: 0o755 });
  fs.copyFileSync(path.join(REPO_ROOT, 'kernels', 'python', 'kernel.json'), path.join(kernels, 'python', 'kernel.json'));
  const broken = await startServer({ name: 'broken', args: ['--kernels-dir', kernels, '--pool', 'off'] });
  fs.rmSync(path.join(kernels, 'python', 'kernel.json'));
  try {
    const c = (name, args) => broken.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    const started = await c('start_session', { language: 'python' });
    assert.equal(started.isError, true);
    assert.equal(sc(started).error, 'sandbox_setup_failed');
    assert.match(sc(started).message, /kernel spec \/.*\/python\/kernel.json/);
    assert.deepEqual(sc(await c('list_sessions', {})).sessions, [], 'the failed session is not kept');
    const oneshot = await c('execute_code', { language: 'python', code: 'print(1)' });
    assert.equal(oneshot.isError, true);
    assert.equal(sc(oneshot).status, 'setup_error');
    assert.equal(sc(oneshot).error_code, 'SANDBOX_SETUP_FAILED');
    assert.match(sc(oneshot).error_message, /kernel spec/);
  } finally {
    await broken.close();
    fs.rmSync(kernels, { recursive: true, force: true });
  }
});
