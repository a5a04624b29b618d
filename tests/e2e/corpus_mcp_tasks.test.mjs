// Hostile corpus, MCP tasks (issue 23, point 4): a client that asks for tasks without end.
// A tools/call its tool refuses at once (an unsupported language) makes no task: over
// stdio and HTTP a bounded loop of them leaves the server's VmRSS where it was (c88e380
// kept each one, with its result, for its TTL: +25 MB per 5000 on stdio; over HTTP each also
// held its POST, body and all). Past --max-tasks-per-client and
// --max-task-results-mb-per-client a task call gets a JSON-RPC error naming the limit, and
// another client still gets its own tasks. Revision 2025-11-25 through the official SDK
// client; 2026-07-28 (the tasks extension) with raw JSON-RPC, which the SDK v2 client
// cannot take for tasks. The caps are set through their variables, which c88e380 ignores.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

import { CallToolResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { caseTable, pidsWithCmdline, serverMemory, startCorpusServer } from './corpus.mjs';
import { startHttpServer, startRawServer } from './lib.mjs';

const kase = caseTable('corpus_mcp_tasks');
const DAY_MS = 86400000;
const refusedCall = (code = 'x') => ({ method: 'tools/call', params: {
  name: 'execute_code', arguments: { language: 'cobol', code }, task: { ttl: DAY_MS } } });

// Sends REQUEST (a task call) and returns { task } when a task was made, else { error }
// (the JSON-RPC error).
async function attempt(client, request) {
  try {
    return { task: (await client.request(request, CreateTaskResultSchema)).task };
  } catch (err) {
    if (err.code === undefined) throw err;
    return { error: err };
  }
}

// Sends REQUEST (a task call that must be refused) and returns the JSON-RPC error it got.
async function refusal(client, request) {
  const { task, error } = await attempt(client, request);
  if (task) throw new Error(`a task was made for a refused call: ${JSON.stringify(task).slice(0, 200)}`);
  return error;
}

// Sends REQUEST COUNT times; returns how many tasks were made (none should be).
async function flood(client, request, count) {
  let made = 0;
  for (let i = 0; i < count; i++) made += (await attempt(client, request)).task ? 1 : 0;
  return made;
}

// Runs ARGS of execute_code as a task and waits for its result (tasks/result).
async function runTask(client, args) {
  const created = await client.request({ method: 'tools/call', params: {
    name: 'execute_code', arguments: { language: 'python', ...args }, task: { ttl: 600000 } } }, CreateTaskResultSchema);
  const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
  return { taskId: created.task.taskId, result };
}

const taskCount = async (client) => (await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema)).tasks.length;

// --- stdio -------------------------------------------------------------------------------

let stdio;
before(async () => {
  stdio = await startCorpusServer({ name: 'corpus-mcp-tasks', env: {
    CELLGATE_MAX_TASK_RESULTS_MB_PER_CLIENT: '1', CELLGATE_MAX_OUTPUT_BYTES: '1048576' } });
});
after(async () => { await stdio?.close(); });

kase('stdio: a task call refused at once (unsupported language)', 'a -32602 error with the refusal as data; no task',
  async () => {
    const err = await refusal(stdio.client, refusedCall());
    assert.equal(err.code, -32602, String(err));
    assert.match(err.message, /language 'cobol' is not supported/);
    assert.equal(err.data?.error_code, 'UNSUPPORTED_LANGUAGE', JSON.stringify(err.data));
    assert.equal(await taskCount(stdio.client), 0, 'tasks/list lists no task');
    return `${err.code}: ${err.message.slice(0, 60)}…; tasks/list: 0`;
  });

kase('stdio: 5000 refused task calls in a row', 'VmRSS grows < 8 MB; no task made', async () => {
  await flood(stdio.client, refusedCall(), 50);
  const before = stdio.memory().rssMb;
  const made = await flood(stdio.client, refusedCall(), 5000);
  const grown = stdio.memory().rssMb - before;
  assert.ok(grown < 8 && made === 0, `VmRSS grew ${grown.toFixed(1)} MB over 5000 refused task calls; ${made} tasks made`);
  return `VmRSS +${grown.toFixed(1)} MB; tasks made: 0`;
});

kase('stdio: results past --max-task-results-mb-per-client (1 MB here)', 'the next task call gets -32600 naming the limit; a plain call still runs',
  async () => {
    for (let i = 0; i < 2; i++) {
      const { result } = await runTask(stdio.client, { session_id: 'sess_taskbytes', code: "print('y' * 700000)", timeout: 120 });
      assert.equal(result.structuredContent.status, 'success', JSON.stringify(result.structuredContent).slice(0, 300));
    }
    const err = await refusal(stdio.client, { method: 'tools/call', params: {
      name: 'execute_code', arguments: { language: 'python', session_id: 'sess_taskbytes', code: 'print(3)' }, task: { ttl: 60000 } } });
    assert.equal(err.code, -32600, String(err));
    assert.match(err.message, /--max-task-results-mb-per-client 1/);
    assert.equal(err.data?.limit, '--max-task-results-mb-per-client');
    const plain = await stdio.call('execute_code', { language: 'python', session_id: 'sess_taskbytes', code: 'print(4)' });
    assert.equal(plain.structuredContent.stdout, '4\n');
    return `${err.code}: ${err.message.slice(0, 90)}…`;
  });

// --- 2026-07-28 over stdio (raw) ---------------------------------------------------------

let raw, rawState;
before(() => {
  rawState = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-corpus-mcp-tasks-'));
  raw = startRawServer(rawState, { args: ['--http-listen', 'off', '--pool', '0'] });
});
after(() => {
  raw?.proc.kill('SIGTERM');
  if (!fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(rawState)) fs.rmSync(rawState, { recursive: true, force: true });
});

kase('2026-07-28: 3000 calls that would be tasks (timeout 120 s, tasks extension) refused at once', 'each answered resultType "complete" with the refusal; VmRSS grows < 8 MB',
  async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    let id = 0;
    const call = async () => {
      const mine = ++id;
      raw.send({ jsonrpc: '2.0', id: mine, method: 'tools/call', params: { name: 'execute_code',
        arguments: { language: 'cobol', code: 'x', timeout: 120 }, _meta: meta } });
      for (;;) {
        const m = await raw.next();
        if (m.id === mine) return m;
      }
    };
    const first = await call();
    const before = serverMemory(raw.proc.pid).rssMb;
    let made = 0;
    for (let i = 0; i < 3000; i++) made += (await call()).result?.resultType === 'task' ? 1 : 0;
    const grown = serverMemory(raw.proc.pid).rssMb - before;
    assert.ok(grown < 8 && made === 0, `VmRSS grew ${grown.toFixed(1)} MB; ${made} tasks made`);
    assert.equal(first.result?.resultType, 'complete', JSON.stringify(first).slice(0, 300));
    assert.equal(first.result.structuredContent.error_code, 'UNSUPPORTED_LANGUAGE');
    return `resultType complete, UNSUPPORTED_LANGUAGE; VmRSS +${grown.toFixed(1)} MB; tasks made: 0`;
  });

// --- Streamable HTTP ---------------------------------------------------------------------

let http, a, b, httpPid;
before(async () => {
  http = await startHttpServer({ env: { CELLGATE_MAX_TASKS_PER_CLIENT: '2' } });
  ({ client: a } = await http.connect());
  ({ client: b } = await http.connect());
  [httpPid] = pidsWithCmdline('mcp', http.stateDir);
});
after(async () => { await http?.close(); });

kase('HTTP: 1500 refused task calls with 90 KB of code each', 'VmRSS grows < 24 MB (no task keeps its POST); no task made', async () => {
  const code = 'x'.repeat(90 * 1024);
  const c = (await http.connect()).client; // its own client: the others' task caps stay whole
  await flood(c, refusedCall(code), 20);
  const before = serverMemory(httpPid).rssMb;
  const made = await flood(c, refusedCall(code), 1500);
  const grown = serverMemory(httpPid).rssMb - before;
  assert.ok(grown < 24 && made === 0, `VmRSS grew ${grown.toFixed(1)} MB over 1500 refused task calls; ${made} tasks made`);
  return `VmRSS +${grown.toFixed(1)} MB; tasks made: 0`;
});

kase('HTTP: a third task past --max-tasks-per-client (2 here)', '-32600 naming the limit; another client still makes its task',
  async () => {
    const made = [];
    for (let i = 0; i < 2; i++)
      made.push((await a.request({ method: 'tools/call', params: { name: 'execute_code',
        arguments: { language: 'python', code: `print(${i})` }, task: { ttl: 60000 } } }, CreateTaskResultSchema)).task.taskId);
    const err = await refusal(a, { method: 'tools/call', params: { name: 'execute_code',
      arguments: { language: 'python', code: 'print(2)' }, task: { ttl: 60000 } } });
    assert.equal(err.code, -32600, String(err));
    assert.match(err.message, /--max-tasks-per-client 2/);
    const theirs = await runTask(b, { code: 'print(5)' });
    assert.equal(theirs.result.structuredContent.stdout, '5\n');
    for (const taskId of made) {
      const r = await a.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.equal(r.structuredContent.status, 'success');
    }
    return `${err.code}: ${err.message.slice(0, 80)}…; the other client's task: 5`;
  });
