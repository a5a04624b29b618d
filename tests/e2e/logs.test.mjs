// The execution log (seed 002) through the MCP SDK client: runs in every language
// (success, failure, timeout) found by search_execution_logs and read back whole by
// get_execution_log; a session's lifecycle file (start, executions, end closed /
// idle_timeout / shutdown); the log surviving a restart; --execution-log off.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer, sleep } from './lib.mjs';

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-logs-'));
let server;

const call = (client, name, args, timeout = 120000) => client.callTool({ name, arguments: args }, undefined, { timeout });
const sc = (r) => r.structuredContent;
const search = async (client, args) => sc(await call(client, 'search_execution_logs', args));
const lines = (file) => fs.readFileSync(path.join(logDir, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l));

async function waitFor(check, ms = 20000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(200)) if (check()) return true;
  return check();
}

before(async () => {
  server = await startServer({ name: 'logs-e2e', args: ['--log-dir', logDir] });
});

after(async () => {
  await server?.close();
  fs.rmSync(logDir, { recursive: true, force: true });
});

const runs = {};

test('runs in python, javascript and bash are logged with their status and full output', async () => {
  const c = server.client;
  const cases = {
    py_ok: { language: 'python', code: 'print("py-marker-ok " * 3)' },
    py_fail: { language: 'python', code: 'raise ValueError("py-marker-fail")' },
    js_ok: { language: 'javascript', code: 'console.log("js-marker-ok")' },
    js_fail: { language: 'javascript', code: 'throw new Error("js-marker-fail")' },
    sh_ok: { language: 'bash', code: 'echo sh-marker-ok; echo to-stderr >&2' },
    sh_fail: { language: 'bash', code: 'echo sh-marker-fail; exit 3' },
    py_timeout: { language: 'python', code: 'import time\nprint("py-marker-slow", flush=True)\ntime.sleep(60)', timeout: 2 },
  };
  for (const [key, args] of Object.entries(cases)) runs[key] = sc(await call(c, 'execute_code', args));
  // A long output, cut in the result.
  runs.long = sc(await call(c, 'execute_code', { language: 'python', code: 'print("L" * 300000)' }));
  assert.ok(runs.long.stdout.length < 300001, 'the result was cut');

  const all = await search(c, { limit: 100 });
  assert.equal(all.total_count, 8);
  assert.equal(all.results.length, 8);
  const failed = await search(c, { status: 'failed' });
  assert.deepEqual(failed.results.map((r) => r.execution_id).sort(),
    [runs.py_fail.execution_id, runs.js_fail.execution_id, runs.sh_fail.execution_id].sort());
  const timeouts = await search(c, { status: 'timeout' });
  assert.deepEqual(timeouts.results.map((r) => r.execution_id), [runs.py_timeout.execution_id]);
  assert.equal(timeouts.results[0].exit_code, null);
  assert.equal((await search(c, { language: 'bash' })).total_count, 2);
  assert.equal((await search(c, { language: 'js' })).total_count, 2, 'a language alias');
  const text = await search(c, { query: 'JS-MARKER' });
  assert.equal(text.total_count, 2, 'text in code and output, any case');
  const inOutput = await search(c, { query: 'to-stderr' });
  assert.deepEqual(inOutput.results.map((r) => r.execution_id), [runs.sh_ok.execution_id]);
  const today = new Date().toISOString().slice(0, 10);
  assert.equal((await search(c, { since: today })).total_count, 8);
  assert.equal((await search(c, { since: '2999-01-01' })).total_count, 0);
  const r = failed.results.find((x) => x.execution_id === runs.py_fail.execution_id);
  assert.equal(r.language, 'python');
  assert.equal(r.code_preview, 'raise ValueError("py-marker-fail")');
  assert.match(r.error_preview, /ValueError/);
  assert.equal(r.session_id, null);
  assert.equal(typeof r.duration_ms, 'number');
  assert.match(r.executed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const bad = await call(c, 'search_execution_logs', { status: 'weird' });
  assert.equal(bad.isError, true);
  const badSince = await call(c, 'search_execution_logs', { since: 'last tuesday' });
  assert.equal(sc(badSince).error, 'invalid_params');
});

test('get_execution_log returns the whole entry; an unknown id is execution_not_found', async () => {
  const c = server.client;
  const e = sc(await call(c, 'get_execution_log', { execution_id: runs.sh_ok.execution_id }));
  assert.equal(e.execution_id, runs.sh_ok.execution_id);
  assert.equal(e.language, 'bash');
  assert.equal(e.code, 'echo sh-marker-ok; echo to-stderr >&2');
  assert.equal(e.stdout, 'sh-marker-ok\n');
  assert.equal(e.stderr, 'to-stderr\n');
  assert.equal(e.exit_code, 0);
  assert.equal(e.status, 'success');
  assert.equal(e.timed_out, false);
  assert.equal(e.sandbox_mode, 'runc');
  assert.equal(e.working_dir, '/mnt/data');
  assert.equal(e.tool, 'execute_code');
  assert.equal(e.client_name, 'logs-e2e');
  assert.deepEqual(Object.keys(e.artifacts).sort(), ['created', 'deleted', 'modified']);
  // Seed 002's get_execution_log fields: the agent is the MCP client; MCP has no trace id and
  // cellgate no Guardian scan, so those are null rather than missing.
  assert.equal(e.agent_id, 'logs-e2e');
  assert.deepEqual(e.packages_installed, []);
  assert.deepEqual([e.artifacts_created, e.artifacts_modified, e.artifacts_deleted], [[], [], []]);
  for (const key of ['trace_id', 'guardian_pre_scan', 'guardian_post_scan']) assert.ok(key in e && e[key] === null, key);
  const t = sc(await call(c, 'get_execution_log', { execution_id: runs.py_timeout.execution_id }));
  assert.equal(t.status, 'timeout');
  assert.equal(t.timed_out, true);
  assert.match(t.stdout, /py-marker-slow/);
  const long = sc(await call(c, 'get_execution_log', { execution_id: runs.long.execution_id }));
  // The result was cut; the log holds the whole output (a one-shot run: no saved file).
  assert.equal(long.stdout.length, 300001);
  assert.ok(long.stdout === 'L'.repeat(300000) + '\n', 'the logged stdout is the whole output');
  assert.equal(long.stdout_truncated_in_log, undefined);
  assert.equal(long.stdout_file, undefined);
  const none = await call(c, 'get_execution_log', { execution_id: 'exec_000000000000' });
  assert.equal(none.isError, true);
  assert.equal(sc(none).error, 'execution_not_found');
  // The day's file holds every execution as a JSON line.
  const day = lines(`executions-${new Date().toISOString().slice(0, 10)}.jsonl`);
  assert.ok(day.length >= 8 && day.every((l) => l.type === 'execution'));
});

test('an output over the log\'s cap is logged up to 1 MiB, marked, with the saved file named', async () => {
  const c = server.client;
  const r = sc(await call(c, 'execute_code', { language: 'python', code: 'print("M" * 1500000)', session_id: 'bigout' }));
  assert.equal(r.stdout_truncated, true);
  assert.match(r.stdout_file, /^\/mnt\/data\/outputs\/exec_[0-9a-f]+-stdout\.txt$/);
  const e = sc(await call(c, 'get_execution_log', { execution_id: r.execution_id }));
  assert.equal(e.stdout_truncated_in_log, true);
  assert.equal(e.stdout_file, r.stdout_file);
  // The day's line holds the first 1 MiB (get_execution_log's own result is held to
  // --max-result-bytes, 1 MiB by default, so its copy is cut again).
  const line = lines(`executions-${new Date().toISOString().slice(0, 10)}.jsonl`).find((l) => l.execution_id === r.execution_id);
  assert.equal(line.stdout.length, 1024 * 1024);
  assert.ok(/^M+$/.test(line.stdout), 'the logged stdout is the output\'s first 1 MiB');
  assert.equal(line.stdout_truncated_in_log, true);
  assert.equal(line.stdout_file, r.stdout_file);
  assert.ok(sc(await call(c, 'close_session', { session_id: 'bigout' })).success);
});

test('a session logs session_start, its executions and session_end closed', async () => {
  const c = server.client;
  const started = sc(await call(c, 'start_session', { language: 'python', name: 'logged' }));
  const id = started.session_id;
  const a = sc(await call(c, 'send_to_session', { session_id: id, code: 'x = 41' }));
  const b = sc(await call(c, 'send_to_session', { session_id: id, code: 'print(x + 1)' }));
  assert.equal(b.stdout, '42\n');
  assert.ok(sc(await call(c, 'close_session', { session_id: id })).success);
  const file = `session-${id}.jsonl`;
  assert.ok(await waitFor(() => fs.existsSync(path.join(logDir, file)) && lines(file).some((l) => l.type === 'session_end')));
  const entries = lines(file);
  assert.deepEqual(entries.map((l) => l.type), ['session_start', 'execution', 'execution', 'session_end']);
  assert.equal(entries[0].language, 'python');
  assert.equal(entries[0].name, 'logged');
  assert.deepEqual(entries.slice(1, 3).map((l) => l.execution_id), [a.execution_id, b.execution_id]);
  assert.equal(entries[2].stdout, '42\n');
  assert.equal(entries[3].reason, 'closed');
  assert.equal(entries[3].executions_count, 2);
  const mine = await search(c, { query: 'print(x + 1)' });
  assert.equal(mine.results[0].session_id, id);
  const sent = sc(await call(c, 'get_execution_log', { execution_id: b.execution_id }));
  assert.equal(sent.tool, 'send_to_session');
});

test('run_python is logged; an idle session ends with idle_timeout', async () => {
  const small = await startServer({ name: 'logs-idle', args: ['--log-dir', logDir, '--idle-ttl', '3'] });
  try {
    const r = sc(await call(small.client, 'run_python', { code: 'print("idle-marker")' }));
    const file = `session-${r.session_id}.jsonl`;
    assert.ok(await waitFor(() => fs.existsSync(path.join(logDir, file)) && lines(file).some((l) => l.type === 'session_end')));
    const entries = lines(file);
    assert.deepEqual(entries.map((l) => l.type), ['session_start', 'execution', 'session_end']);
    assert.equal(entries[2].reason, 'idle_timeout');
    const e = sc(await call(small.client, 'get_execution_log', { execution_id: r.execution_id }));
    assert.equal(e.tool, 'run_python');
    assert.equal(e.run_id, r.run_id);
  } finally {
    await small.close();
  }
});

test('the log survives a restart; a session open at shutdown ends with shutdown', async () => {
  const r = sc(await call(server.client, 'execute_code', { language: 'python', code: 'y = 1', session_id: 'shut1' }));
  await server.close();
  const file = 'session-shut1.jsonl';
  assert.ok(await waitFor(() => lines(file).some((l) => l.type === 'session_end')));
  assert.equal(lines(file).at(-1).reason, 'shutdown');
  fs.rmSync(path.join(logDir, 'index.sqlite'), { force: true }); // rebuilt from the lines
  server = await startServer({ name: 'logs-e2e', args: ['--log-dir', logDir] });
  const all = await search(server.client, { limit: 100 });
  assert.ok(all.results.some((x) => x.execution_id === runs.py_ok.execution_id));
  assert.ok(all.results.some((x) => x.execution_id === r.execution_id));
  const e = sc(await call(server.client, 'get_execution_log', { execution_id: runs.js_ok.execution_id }));
  assert.equal(e.stdout, 'js-marker-ok\n');
});

test('--execution-log off records nothing', async () => {
  const offDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-logs-off-'));
  const off = await startServer({ name: 'logs-off', args: ['--log-dir', offDir, '--execution-log', 'off'] });
  try {
    const r = sc(await call(off.client, 'execute_code', { language: 'python', code: 'print(1)', session_id: 'off1' }));
    assert.equal(r.stdout, '1\n');
    assert.equal((await search(off.client, {})).total_count, 0);
    assert.equal(sc(await call(off.client, 'get_execution_log', { execution_id: r.execution_id })).error, 'execution_not_found');
    assert.deepEqual(fs.readdirSync(offDir).filter((f) => f.endsWith('.jsonl')), []);
  } finally {
    await off.close();
    fs.rmSync(offDir, { recursive: true, force: true });
  }
});
