// Tasks on MCP 2026-07-28 (issue 16, point 2): the io.modelcontextprotocol/tasks extension.
// A request that declares it and calls a tool that runs code with a timeout past 60 s is
// answered {resultType: "task", taskId, ttlMs, pollIntervalMs}; tasks/get polls it (the
// result inline once completed), tasks/update answers its cell's input(), tasks/cancel
// interrupts the kernel (the session keeps its state) and acks; without the extension in
// the request the task methods are -32021 and a long call runs synchronously. Over stdio
// and Streamable HTTP (Mcp-Name carries the taskId), with raw JSON-RPC: the SDK v2 client
// does not take resultType "task" (see docs/mcp.md).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startHttpServer, startRawServer } from './lib.mjs';

const V = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const meta = (tasks = true) => ({
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientInfo': { name: 'cellgate-e2e-tasks', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': tasks ? { elicitation: { form: {} }, extensions: { [TASKS]: {} } } : {},
});

// A JSON-RPC caller over stdio (raw) or HTTP (fetch with 2026-07-28's headers).
function stdioRpc(server) {
  let id = 0;
  return async (method, params = {}, { tasks = true } = {}) => {
    const mine = ++id;
    server.send({ jsonrpc: '2.0', id: mine, method, params: { ...params, _meta: meta(tasks) } });
    for (;;) {
      const m = await server.next();
      if (m.id === mine) return { ...m, status: 200 };
    }
  };
}
function httpRpc(url, { mcpName } = {}) {
  let id = 1000;
  return async (method, params = {}, { tasks = true, name } = {}) => {
    const mine = ++id;
    const n = name ?? params.name ?? params.uri ?? params.taskId;
    const res = await fetch(url, { method: 'POST', headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': V, 'Mcp-Method': method, ...(n ? { 'Mcp-Name': String(n) } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: mine, method, params: { ...params, _meta: meta(tasks) } }) });
    const text = await res.text();
    const msgs = res.headers.get('content-type')?.includes('text/event-stream')
      ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)))
      : [JSON.parse(text)];
    return { ...msgs.find((m) => m.id === mine), status: res.status };
  };
}

const execute = (code, extra = {}) => ({ name: 'execute_code', arguments: { language: 'python', timeout: 120, code, ...extra } });

// Polls TASKID until it ends, answering its input requests with ANSWER. Returns the last get.
async function poll(rpc, taskId, answer) {
  for (let i = 0; i < 200; i++) {
    const g = (await rpc('tasks/get', { taskId })).result;
    assert.equal(g.resultType, 'complete');
    if (g.status === 'input_required') {
      const keys = Object.keys(g.inputRequests);
      assert.equal(g.inputRequests[keys[0]].method, 'elicitation/create');
      const ack = await rpc('tasks/update', { taskId, inputResponses: { [keys[0]]: { action: 'accept', content: { input: answer } } } });
      assert.equal(ack.result.resultType, 'complete');
    }
    if (['completed', 'failed', 'cancelled'].includes(g.status)) return g;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`task ${taskId} did not end`);
}

function scenarios(get) {
  test('server/discover offers the tasks extension', async () => {
    const d = (await get()('server/discover')).result;
    assert.deepEqual(d.capabilities.extensions, { [TASKS]: {} });
  });

  test('a call that may run past 60 s is a task: polled to completion, input() answered with tasks/update', async () => {
    const rpc = get();
    const created = (await rpc('tools/call', execute("import time\nname = input('Name? ')\ntime.sleep(2)\nprint('hi', name)", { session_id: 'mt1' }))).result;
    assert.equal(created.resultType, 'task', JSON.stringify(created));
    assert.equal(created.status, 'working');
    assert.ok(Number.isInteger(created.ttlMs) && Number.isInteger(created.pollIntervalMs), JSON.stringify(created));
    assert.equal(created.ttl, undefined, "2025's names never appear");
    const g = await poll(rpc, created.taskId, 'Ada');
    assert.equal(g.status, 'completed');
    assert.match(g.result.structuredContent.stdout, /hi Ada/);
    // A short call stays synchronous.
    const short = (await rpc('tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'print(1)' } })).result;
    assert.equal(short.resultType, 'complete');
  });

  test('tasks/cancel interrupts the cell and acks, again too; the session keeps its state', async () => {
    const rpc = get();
    await rpc('tools/call', { name: 'execute_code', arguments: { language: 'python', session_id: 'mt2', code: 'kept = 41' } });
    const created = (await rpc('tools/call', execute('import time\nkept += 1\ntime.sleep(100)', { session_id: 'mt2' }))).result;
    await new Promise((r) => setTimeout(r, 1500));
    const ack = await rpc('tasks/cancel', { taskId: created.taskId });
    assert.equal(ack.result.resultType, 'complete', JSON.stringify(ack));
    assert.equal((await rpc('tasks/get', { taskId: created.taskId })).result.status, 'cancelled');
    assert.equal((await rpc('tasks/cancel', { taskId: created.taskId })).result.resultType, 'complete', 'a second cancel acks');
    let out;
    for (let i = 0; i < 40; i++) {
      out = (await rpc('tools/call', { name: 'execute_code', arguments: { language: 'python', session_id: 'mt2', code: 'print(kept)' } })).result.structuredContent;
      if (out.error_code !== 'SESSION_BUSY') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(out.stdout, '42\n', JSON.stringify(out));
  });

  test('without the extension: the task methods are -32021, a long call is synchronous; tasks/list is gone', async () => {
    const rpc = get();
    const g = await rpc('tasks/get', { taskId: 'x' }, { tasks: false });
    assert.equal(g.error.code, -32021);
    assert.deepEqual(g.error.data.requiredCapabilities, { extensions: { [TASKS]: {} } });
    const long = (await rpc('tools/call', execute('print(3)'), { tasks: false })).result;
    assert.equal(long.resultType, 'complete');
    assert.equal(long.structuredContent.stdout, '3\n');
    assert.equal((await rpc('tasks/list')).error.code, -32601);
    assert.equal((await rpc('tasks/get', { taskId: 'no-such' })).error.code, -32602);
  });
}

describe('over stdio', () => {
  let server, state;
  before(() => {
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-mtasks-'));
    server = startRawServer(state, { args: ['--http-listen', 'off'] });
  });
  after(async () => {
    server.proc.stdin.end();
    await new Promise((r) => server.proc.on('exit', r));
    fs.rmSync(state, { recursive: true, force: true });
  });
  scenarios(() => stdioRpc(server));
});

describe('over Streamable HTTP', () => {
  let server;
  before(async () => { server = await startHttpServer(); });
  after(async () => { await server?.close(); });
  scenarios(() => httpRpc(server.url));

  test('statuses: -32021 is 400, -32601 404; Mcp-Name must be the taskId (400, -32020)', async () => {
    const rpc = httpRpc(server.url);
    assert.equal((await rpc('tasks/get', { taskId: 'x' }, { tasks: false })).status, 400);
    assert.equal((await rpc('tasks/list')).status, 404);
    const created = (await rpc('tools/call', execute('print(4)'))).result;
    const wrong = await rpc('tasks/get', { taskId: created.taskId }, { name: 'another-task' });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.error.code, -32020);
  });
});
