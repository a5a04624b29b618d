// Tasks (issue 16, point 2, on revision 2025-11-25): a tools/call of a tool that runs code,
// made with params.task, answers at once with a task; the official SDK client polls it
// (tasks/get) and takes its result (tasks/result), over stdio and Streamable HTTP. A long
// cell runs to completion that way: over stdio CG_TASK_LONG_S seconds (default 5; ctest's
// e2e_tasks_long runs 200 s, longer than any client's request timeout). tasks/cancel
// interrupts the kernel and keeps the session's state; tasks/list lists the client's tasks
// and no other client's; a finished task is forgotten after its TTL.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { callExec, sc, startHttpServer, startServer } from './lib.mjs';

// Runs ARGS of execute_code as a task through the SDK's callToolStream (tasks/get polls,
// then tasks/result). Returns { created, statuses, result, error }.
async function runAsTask(client, args, task = { ttl: 600000 }) {
  const seen = { created: null, statuses: [], result: null, error: null };
  const stream = client.experimental.tasks.callToolStream(
    { name: 'execute_code', arguments: { language: 'python', ...args } }, CallToolResultSchema,
    { task, timeout: 60000 });
  for await (const message of stream) {
    if (message.type === 'taskCreated') seen.created = message.task;
    else if (message.type === 'taskStatus') seen.statuses.push(message.task.status);
    else if (message.type === 'result') seen.result = message.result;
    else if (message.type === 'error') seen.error = message.error;
  }
  return seen;
}

function scenarios(get, { long }) {
  test('the server says it takes tasks, and which tools do', async () => {
    const { client } = get();
    const caps = client.getServerCapabilities();
    assert.deepEqual(caps.tasks?.requests?.tools?.call, {}, JSON.stringify(caps));
    assert.ok(caps.tasks.list && caps.tasks.cancel, JSON.stringify(caps.tasks));
    const tools = (await client.listTools()).tools;
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(support.execute_code, 'optional');
    assert.equal(support.send_to_session, 'optional');
    assert.equal(support.list_sessions, undefined, 'only the tools that run code');
  });

  test(`a ${long} s cell runs as a task, polled to completion with its output`, { timeout: (long + 120) * 1000 },
    async () => {
      const { client } = get();
      const run = await runAsTask(client, {
        session_id: 'task_long',
        code: `import time\nstart = time.time()\ntime.sleep(${long})\nprint('slept', round(time.time() - start))`,
        timeout: long + 60,
      });
      assert.equal(run.error, null, String(run.error));
      assert.equal(run.created.status, 'working');
      assert.equal(run.created.ttl, 600000);
      assert.ok(run.created.pollInterval > 0);
      assert.ok(run.statuses.includes('working') && run.statuses.at(-1) === 'completed', run.statuses.join());
      const s = run.result.structuredContent;
      assert.equal(s.status, 'success', JSON.stringify(s));
      assert.equal(s.stdout, `slept ${long}\n`);
      assert.deepEqual(run.result._meta['io.modelcontextprotocol/related-task'], { taskId: run.created.taskId });
      // The task stays readable (its TTL) with its result.
      const again = await client.experimental.tasks.getTaskResult(run.created.taskId, CallToolResultSchema);
      assert.equal(again.structuredContent.stdout, `slept ${long}\n`);
    });

  test('tasks/result waits for a running task; an error of the code is a completed task', async () => {
    const { client } = get();
    const created = await client.request({ method: 'tools/call', params: {
      name: 'execute_code', arguments: { language: 'python', code: 'import time\ntime.sleep(3)\n1/0' },
      task: { ttl: 60000 } } }, CreateTaskResultSchema);
    const t0 = Date.now();
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    assert.ok(Date.now() - t0 > 1500, 'it waited for the cell');
    assert.equal(result.structuredContent.status, 'execution_error');
    assert.match(result.structuredContent.stderr, /ZeroDivisionError/);
    const task = await client.experimental.tasks.getTask(created.task.taskId);
    assert.equal(task.status, 'completed');
  });

  test('tasks/cancel interrupts the cell and the session keeps its state', async () => {
    const { client } = get();
    const set = sc(await callExec(client, { language: 'python', session_id: 'task_cancel', code: 'kept = 41' }));
    assert.equal(set.status, 'success', JSON.stringify(set));
    const created = await client.request({ method: 'tools/call', params: {
      name: 'execute_code', arguments: { language: 'python', session_id: 'task_cancel',
        code: 'import time\nkept += 1\ntime.sleep(120)' }, task: { ttl: 60000 } } }, CreateTaskResultSchema);
    await new Promise((r) => setTimeout(r, 2000));
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    await assert.rejects(client.experimental.tasks.cancelTask(created.task.taskId), /ended|-32602/,
      'a task that ended cannot be cancelled again');
    // The interrupted cell stops; the next call finds the variables as they were.
    let after;
    for (let i = 0; i < 40; i++) {
      after = sc(await callExec(client, { language: 'python', session_id: 'task_cancel', code: 'print(kept)' }));
      if (after.error_code !== 'SESSION_BUSY') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(after.stdout, '42\n', JSON.stringify(after));
    const task = await client.experimental.tasks.getTask(created.task.taskId);
    assert.equal(task.status, 'cancelled');
  });

  test('tasks/list lists this client\'s tasks; unknown ids and bad cursors are -32602', async () => {
    const { client } = get();
    const list = await client.experimental.tasks.listTasks();
    assert.ok(list.tasks.length >= 3, JSON.stringify(list));
    for (const t of list.tasks) assert.match(t.status, /^(working|completed|failed|cancelled)$/);
    await assert.rejects(client.experimental.tasks.getTask('no-such-task'), /Unknown task/);
    await assert.rejects(client.experimental.tasks.listTasks('x'), /invalid cursor/);
  });

  test('a finished task is forgotten after its TTL', async () => {
    const { client } = get();
    // In a session already started, so that the task's own run is a warm cell, well inside
    // its TTL even on a loaded machine (a new sandbox can take longer than the TTL there).
    sc(await callExec(client, { language: 'python', session_id: 'task_ttl', code: 'pass' }));
    const t0 = Date.now();
    const run = await runAsTask(client, { session_id: 'task_ttl', code: 'print(1)' }, { ttl: 6000 });
    assert.equal(run.error, null, String(run.error));
    assert.equal(run.result.structuredContent.stdout, '1\n');
    // Kept for its TTL (from its creation), then gone.
    assert.equal((await client.experimental.tasks.getTask(run.created.taskId)).status, 'completed');
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + 7500 - Date.now())));
    await assert.rejects(client.experimental.tasks.getTask(run.created.taskId), /Unknown task/);
  });

  test('a tool that does not run code refuses params.task', async () => {
    const { client } = get();
    await assert.rejects(client.request({ method: 'tools/call', params: { name: 'list_sessions',
      arguments: {}, task: {} } }, CallToolResultSchema), /does not run as a task/);
  });
}

describe('over stdio', () => {
  let server;
  before(async () => { server = await startServer({ name: 'tasks' }); });
  after(async () => { await server?.close(); });
  scenarios(() => ({ client: server.client }), { long: Number(process.env.CG_TASK_LONG_S ?? 5) });
});

describe('over Streamable HTTP', () => {
  let server, client, other;
  before(async () => {
    server = await startHttpServer();
    ({ client } = await server.connect());
    ({ client: other } = await server.connect());
  });
  after(async () => { await server?.close(); });
  scenarios(() => ({ client }), { long: 5 });

  test('another client sees none of these tasks', async () => {
    const mine = await client.experimental.tasks.listTasks();
    assert.ok(mine.tasks.length > 0);
    const theirs = await other.experimental.tasks.listTasks();
    assert.equal(theirs.tasks.length, 0, JSON.stringify(theirs));
    await assert.rejects(other.experimental.tasks.getTask(mine.tasks[0].taskId), /Unknown task/);
  });
});

// input() in a task: the task goes input_required, the SDK client (seeing it) calls
// tasks/result, the elicitation request comes on that stream, the answer reaches the cell.
describe('input() in a task asks the user through tasks/result', () => {
  const asked = [];
  const capabilities = { elicitation: { form: {} } };
  const onClient = (client) => client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return asked.length === 1 ? { action: 'accept', content: { input: 'Ada' } } : { action: 'decline' };
  });
  const check = async (client) => {
    asked.length = 0;
    const run = await runAsTask(client, { code: "name = input('Name? ')\nprint('hi', name)\ninput('More? ')" });
    assert.equal(run.error, null, String(run.error));
    assert.ok(run.statuses.includes('input_required'), run.statuses.join());
    assert.equal(asked.length, 2, JSON.stringify(asked));
    assert.match(asked[0].message, /Name\?/);
    assert.deepEqual(asked[0]._meta['io.modelcontextprotocol/related-task'], { taskId: run.created.taskId });
    const s = run.result.structuredContent;
    assert.match(s.stdout, /hi Ada/);
    assert.match(s.stderr, /EOFError/, 'a declined second input() is EOF');
  };
  test('over stdio', async () => {
    const server = await startServer({ name: 'tasks-input', capabilities, onClient });
    try { await check(server.client); } finally { await server.close(); }
  });
  test('over Streamable HTTP', async () => {
    const server = await startHttpServer();
    try {
      const { client } = await server.connect(undefined, { capabilities, onClient });
      await check(client);
    } finally { await server.close(); }
  });
});

describe('--max-timeout: how long a call may ask to run', () => {
  test('300 s by default; an operator allows more with --max-timeout or seed 002\'s CODEXEC_MAX_TIMEOUT_MS', async () => {
    const maximum = (tools) => tools.find((t) => t.name === 'execute_code').inputSchema.properties.timeout.maximum;
    const plain = await startServer({ name: 'tasks-max-default' });
    try {
      assert.equal(maximum(plain.tools), 300);
      const refused = sc(await callExec(plain.client, { language: 'python', code: '1', timeout: 400 }));
      assert.equal(refused.error_code, 'INVALID_PARAMS', JSON.stringify(refused));
      assert.match(refused.error_message, /from 1 to 300/);
    } finally {
      await plain.close();
    }
    const longer = await startServer({ name: 'tasks-max-900', args: ['--max-timeout', '900'] });
    try {
      assert.equal(maximum(longer.tools), 900);
      const ok = sc(await callExec(longer.client, { language: 'python', code: 'print(2)', timeout: 400 }));
      assert.equal(ok.stdout, '2\n', JSON.stringify(ok));
    } finally {
      await longer.close();
    }
    const seed = await startServer({ name: 'tasks-max-seed', env: { CODEXEC_MAX_TIMEOUT_MS: '600000' } });
    try {
      assert.equal(maximum(seed.tools), 600);
    } finally {
      await seed.close();
    }
  });
});
