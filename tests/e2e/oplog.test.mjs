// Seed 004's operations (its stage 5 and section 5) through the MCP SDK client: the log
// in JSON (--log-format json) appended to a file (--log-file), every line timestamped;
// one record per tools/call (immediate, deferred, a JSON-RPC error, a cancelled run)
// with tool, client, session, run and execution ids, duration, exit code, status;
// seed 004's SANDBOX_* and seed 002's CODEXEC_* variables taking effect (CELLGATE_*
// winning), unknown and unsupported ones warned about; each tool's own default timeout;
// and the console format on stderr by default.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer, callExec, sc, show, sleep } from './lib.mjs';

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-oplog-'));
const logFile = path.join(logDir, 'sandbox.log');
let server;

const env = {
  SANDBOX_EXEC_TIMEOUT_S: '45', // run_python's default (seed 004)
  CODEXEC_DEFAULT_TIMEOUT_MS: '20000', // execute_code's (seed 002: milliseconds)
  SANDBOX_MAX_SESSIONS: '7',
  SANDBOX_LOG_LEVEL: 'DEBUG', // loses to CELLGATE_LOG_LEVEL
  CELLGATE_LOG_LEVEL: 'info',
  SANDBOX_COLOUR: 'blue', // unknown
  CODEXEC_DOCKER_NETWORK: 'none', // known, no such setting in cellgate
};

const readLog = () =>
  fs.readFileSync(logFile, 'utf8').split('\n').filter((l) => l !== '').map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      assert.fail(`a log line is not JSON: ${l}`);
    }
  });
const records = () => readLog().filter((l) => l.msg === 'tool call');

async function waitFor(check, ms = 60000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(200)) if (check()) return true;
  return check();
}

before(async () => {
  fs.writeFileSync(logFile, 'an earlier line\n');
  server = await startServer({ name: 'oplog-e2e', args: ['--log-format', 'json', '--log-file', logFile], env });
});

after(async () => {
  await server?.close();
  fs.rmSync(logDir, { recursive: true, force: true });
});

test('start-up: the log is appended as JSON lines with timestamps; warnings and aliases named', () => {
  const text = fs.readFileSync(logFile, 'utf8');
  assert.ok(text.startsWith('an earlier line\n'), 'appended, not truncated');
  fs.writeFileSync(logFile, text.slice('an earlier line\n'.length)); // the rest must all be JSON
  const lines = readLog();
  assert.ok(lines.length > 0);
  for (const l of lines) {
    assert.match(l.ts, TS, JSON.stringify(l));
    assert.ok(['error', 'warn', 'info', 'debug'].includes(l.level), JSON.stringify(l));
    assert.equal(typeof l.msg, 'string');
  }
  const warn = lines.filter((l) => l.level === 'warn').map((l) => l.msg);
  assert.equal(warn.filter((m) => m.startsWith('SANDBOX_COLOUR:')).length, 1, warn.join('\n'));
  assert.match(warn.find((m) => m.startsWith('SANDBOX_COLOUR:')), /not a setting cellgate knows/);
  assert.match(warn.find((m) => m.startsWith('CODEXEC_DOCKER_NETWORK:')) ?? '', /no such setting/);
  const info = lines.filter((l) => l.level === 'info').map((l) => l.msg);
  assert.ok(info.includes('SANDBOX_EXEC_TIMEOUT_S=45 gives --run-python-timeout 45'), info.join('\n'));
  assert.ok(info.includes('CODEXEC_DEFAULT_TIMEOUT_MS=20000 gives --default-timeout 20'), info.join('\n'));
  assert.ok(info.includes('SANDBOX_LOG_LEVEL: ignored, CELLGATE_LOG_LEVEL is set'), info.join('\n'));
  assert.ok(!lines.some((l) => l.level === 'debug'), 'CELLGATE_LOG_LEVEL=info won over SANDBOX_LOG_LEVEL');
  assert.ok(!/cellgate (info|warn):/.test(server.stderrText()), `nothing logged on stderr:\n${server.stderrText()}`);
});

test('each tool states its own default timeout (seed 004: run_python; seeds 000/002: execute_code)', () => {
  const timeoutOf = (name) => server.tools.find((t) => t.name === name).inputSchema.properties.timeout;
  assert.equal(timeoutOf('run_python').default, 45); // SANDBOX_EXEC_TIMEOUT_S
  assert.match(timeoutOf('run_python').description, /\(default 45\)/);
  assert.equal(timeoutOf('execute_code').default, 20); // CODEXEC_DEFAULT_TIMEOUT_MS
  assert.equal(timeoutOf('send_to_session').default, 20);
});

test('one record per tools/call, with the ids, duration, exit code and status', async () => {
  const before = records().length;
  const ok = await callExec(server.client, { language: 'python', code: 'print(1)' });
  assert.equal(sc(ok).exit_code, 0, show(ok, server));
  const failed = await server.client.callTool({ name: 'run_python', arguments: { session_id: 'op-s1', code: 'raise ValueError("x")' } }, undefined, { timeout: 120000 });
  assert.equal(sc(failed).exit_code, 1, show(failed, server));
  const listed = await server.client.callTool({ name: 'list_sessions', arguments: {} });
  assert.ok(!listed.isError, show(listed, server));
  await assert.rejects(server.client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool/);
  assert.ok(await waitFor(() => records().length >= before + 4), JSON.stringify(records()));
  const mine = records().slice(before);
  assert.equal(mine.length, 4, JSON.stringify(mine));
  for (const r of mine) {
    assert.match(r.ts, TS);
    assert.equal(r.level, 'info');
    assert.equal(r.client_name, 'oplog-e2e');
    assert.equal(r.client_version, '0.0.0');
    assert.equal(r.client_id, 'stdio');
    assert.ok(Number.isInteger(r.duration_ms) && r.duration_ms >= 0, JSON.stringify(r));
    for (const key of ['tool', 'session_id', 'run_id', 'execution_id', 'exit_code', 'status']) assert.ok(key in r, `${key} in ${JSON.stringify(r)}`);
  }
  const [exec, run, list, unknown] = mine;
  assert.equal(exec.tool, 'execute_code');
  assert.equal(exec.execution_id, sc(ok).execution_id);
  assert.equal(exec.session_id, null);
  assert.equal(exec.exit_code, 0);
  assert.equal(exec.status, 'success');
  assert.equal(exec.timeout_ms, 20000);
  assert.ok(!('error_code' in exec));

  assert.equal(run.tool, 'run_python');
  assert.equal(run.session_id, 'op-s1');
  assert.equal(run.run_id, sc(failed).run_id);
  assert.match(run.run_id, /^run_\d{8}T\d{6}Z_[0-9a-f]{4}$/);
  assert.equal(run.execution_id, sc(failed).execution_id);
  assert.equal(run.exit_code, 1);
  assert.equal(run.status, sc(failed).status);
  assert.equal(run.timeout_ms, 45000); // run_python's own default
  if (sc(failed).error_code) assert.equal(run.error_code, sc(failed).error_code);

  assert.equal(list.tool, 'list_sessions');
  assert.equal(list.status, 'success');
  assert.ok(!('timeout_ms' in list));

  assert.equal(unknown.tool, 'no_such_tool');
  assert.equal(unknown.status, 'error');
  assert.equal(unknown.error_code, -32602);

  // Timestamps: in order, and today's.
  const times = readLog().map((l) => Date.parse(l.ts));
  for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], 'timestamps in order');
  assert.ok(Math.abs(times.at(-1) - Date.now()) < 10 * 60 * 1000, 'UTC, not local time');
});

test('a cancelled run is recorded once, as cancelled', async () => {
  const before = records().length;
  const controller = new AbortController();
  const pending = callExec(server.client, { language: 'python', session_id: 'op-cancel', code: 'import time\nprint("go", flush=True)\ntime.sleep(60)' }, { signal: controller.signal });
  await sleep(3000);
  controller.abort();
  await assert.rejects(pending);
  assert.ok(await waitFor(() => records().length > before), 'a record appears');
  await sleep(500);
  const mine = records().slice(before);
  assert.equal(mine.length, 1, JSON.stringify(mine));
  assert.equal(mine[0].tool, 'execute_code');
  assert.equal(mine[0].session_id, 'op-cancel');
  assert.equal(mine[0].status, 'cancelled');
});

test('console format (the default) on stderr: timestamped lines, the record as key=value', async () => {
  const other = await startServer({ name: 'console e2e', env: { SANDBOX_COLOUR: 'red' } });
  try {
    await other.client.callTool({ name: 'list_sessions', arguments: {} });
    const found = () => other.stderrText().split('\n').find((l) => / cellgate info: tool call /.test(l));
    assert.ok(await waitFor(found, 20000), other.stderrText());
    const lines = other.stderrText().split('\n').filter((l) => / cellgate (error|warn|info|debug): /.test(l));
    for (const l of lines) assert.match(l.split(' ')[0], TS, l);
    assert.ok(lines.some((l) => / cellgate warn: SANDBOX_COLOUR: ignored, not a setting cellgate knows/.test(l)), lines.join('\n'));
    const record = found();
    assert.match(record, / tool=list_sessions /);
    assert.match(record, / client_name="console e2e" /);
    assert.match(record, / status=success/);
    assert.match(record, / duration_ms=\d+ /);
  } finally {
    await other.close();
  }
});
