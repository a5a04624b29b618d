// Protocol-level and lifecycle checks that the SDK client cannot make: malformed JSON-RPC
// over raw stdio, and the clean-up of sandboxes a crashed (SIGKILLed) server left behind.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startRawServer } from './lib.mjs';

const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

const startRaw = (state) => startRawServer(state);

function runcContainers(state) {
  const root = path.join(state, 'runtime-runc');
  if (!fs.existsSync(root)) return [];
  const out = execFileSync('runc', ['--root', root, 'list', '-q'], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

test('malformed JSON-RPC gets the right errors and the server stays up', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-raw-'));
  const s = startRaw(state);
  try {
    s.send('{"jsonrpc":"2.0","id":1,"method":"ping"');           // truncated
    let m = await s.next();
    assert.equal(m.error.code, -32700);
    assert.equal(m.id, null);
    s.send(JSON.stringify(INIT));
    m = await s.next();
    assert.equal(m.result.protocolVersion, '2025-11-25');
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'no/such/method' }));
    m = await s.next();
    assert.equal(m.error.code, -32601);
    s.send(JSON.stringify({ jsonrpc: '1.0', id: 3, method: 'ping' }));
    m = await s.next();
    assert.equal(m.error.code, -32600);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'nope' } }));
    m = await s.next();
    assert.equal(m.error.code, -32602);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'x' }));
    m = await s.next();
    assert.equal(m.error.code, -32600);
    s.send('\u0000\u00ff garbage');
    m = await s.next();
    assert.equal(m.error.code, -32700);
    // An escaped NUL followed by a syntax error is a parse error too, not silence (fuzz_jsonrpc).
    s.send('{"jsonrpc":"2.0","id":8,"method":"x","params":{"a":"\\u0000"},}');
    m = await s.next();
    assert.equal(m.error.code, -32700);
    assert.equal(m.id, null);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'initialize', params: { protocolVersion: '1999-01-01' } }));
    m = await s.next();
    assert.equal(m.result.protocolVersion, '2025-11-25', 'an unknown version is answered with ours');
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }));
    m = await s.next();
    assert.equal(m.id, 7);
    assert.deepEqual(m.result, {});
  } finally {
    s.proc.stdin.end();
    await new Promise((resolve) => s.proc.on('exit', resolve));
    fs.rmSync(state, { recursive: true, force: true });
  }
});

test('a restarted server removes the sandboxes a killed server left', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-crash-'));
  const first = startRaw(state);
  first.send(JSON.stringify(INIT));
  await first.next();
  first.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'execute_code', arguments: { language: 'python', code: 'x = 1', session_id: 'left_behind' } } }));
  const r = await first.next();
  assert.equal(r.result.structuredContent.status, 'success');
  const before = runcContainers(state);
  assert.equal(before.length, 1, 'one sandbox runs');
  first.proc.kill('SIGKILL');
  await new Promise((resolve) => first.proc.on('exit', resolve));
  assert.deepEqual(runcContainers(state), before, 'the killed server could not clean up');

  const second = startRaw(state);
  second.send(JSON.stringify(INIT));
  await second.next();      // start-up clean-up happens before the server answers
  assert.deepEqual(runcContainers(state), [], 'the orphan sandbox is gone');
  const instances = fs.readdirSync(path.join(state, 'instances'));
  assert.equal(instances.length, 1, 'only the new instance directory remains');
  second.proc.stdin.end();
  await new Promise((resolve) => second.proc.on('exit', resolve));
  assert.deepEqual(runcContainers(state), []);
  fs.rmSync(state, { recursive: true, force: true });
});

test('a second call on a busy session gets SESSION_BUSY at once; other calls still run', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-busy-'));
  const s = startRaw(state);
  try {
    s.send(JSON.stringify(INIT));
    await s.next();
    const call = (id, code, session_id) => s.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'python', code, session_id } } }));
    call(1, 'import time; time.sleep(8); print("first")', 'busy_one');
    // Let the first call reach the runner before the second arrives.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    call(2, 'print("second")', 'busy_one');
    call(3, 'print("other")', 'busy_two');
    const order = [];
    const byId = {};
    for (let i = 0; i < 3; i++) {
      const m = await s.next();
      order.push(m.id);
      byId[m.id] = m.result.structuredContent;
    }
    assert.equal(byId[2].error_code, 'SESSION_BUSY');
    assert.equal(byId[2].status, 'setup_error');
    assert.equal(byId[3].stdout, 'other\n');
    assert.equal(byId[1].stdout, 'first\n');
    assert.deepEqual(order, [2, 3, 1], 'busy answer first, the other session before the long cell');
  } finally {
    s.proc.stdin.end();
    await new Promise((resolve) => s.proc.on('exit', resolve));
    fs.rmSync(state, { recursive: true, force: true });
  }
});
