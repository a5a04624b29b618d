// One run pipeline (issue 24, point 3): a cell a Jupyter front end runs through the gateway's
// WebSocket in the agent's session kernel ends through the same path as the agent's own runs.
// The execution log has it (tool "gateway", the front end's client: the Jupyter message
// header's username), search_execution_logs finds it, /metrics' cellgate_runs_total counts
// it, and list_sessions' executions_count and last_activity_at move; an MCP run moves the
// gateway's GET /api/kernels last_activity in turn. The notebook client is
// tests/gateway/gwclient.py (websocket-client, the protocol Jupyter Server speaks).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { REPO_ROOT, callExec, sc, startHttpServer } from './lib.mjs';

const TOKEN = crypto.randomBytes(16).toString('hex');
const ADMIN_TOKEN = crypto.randomBytes(16).toString('hex');
const GWCLIENT = path.join(REPO_ROOT, 'tests', 'gateway', 'gwclient.py');
const SESSION = 'pipe1';

let server;
let client;

before(async () => {
  server = await startHttpServer({ args: ['--gateway-token', TOKEN, '--admin-token', ADMIN_TOKEN] });
  ({ client } = await server.connect());
});

after(async () => {
  await server?.close();
});

const tail = () => `\n--- server stderr (tail) ---\n${server.stderrText().slice(-4000)}`;

const call = async (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

// GET on the server with the gateway's or the admin's token; returns { status, body }.
async function get(urlPath, auth) {
  const res = await fetch(`http://127.0.0.1:${server.port}${urlPath}`, { headers: { Authorization: auth } });
  const text = await res.text();
  let body = text;
  try { body = JSON.parse(text); } catch {}
  return { status: res.status, body };
}

// The value of cellgate_runs_total{status="STATUS"} (0 when absent).
async function runs(status) {
  const scraped = await get('/metrics', `Bearer ${ADMIN_TOKEN}`);
  assert.equal(scraped.status, 200, JSON.stringify(scraped));
  const key = `cellgate_runs_total{status="${status}"} `;
  const line = scraped.body.split('\n').find((l) => l.startsWith(key));
  return line === undefined ? 0 : Number(line.slice(key.length));
}

// Runs CELLS, one after the other, in KERNEL through the gateway with gwclient.py;
// resolves { code, events, stderr } once every cell's reply and idle status came.
function notebook(kernel, cells) {
  const args = [GWCLIENT, '--url', `http://127.0.0.1:${server.port}`, '--token', TOKEN, '--kernel', kernel, '--timeout', '60'];
  for (const cell of cells) args.push('--code', cell);
  const proc = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c) => { stdout += c; });
  proc.stderr.on('data', (c) => { stderr += c; });
  return new Promise((resolve) => proc.on('close', (code) => resolve({
    code,
    events: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)),
    stderr,
  })));
}

const mine = async () => sc(await call('list_sessions', {})).sessions.find((s) => s.session_id === SESSION);

test("a gateway cell in the agent's kernel is logged, counted and moves the session", async () => {
  const first = await callExec(client, { language: 'python', session_id: SESSION, code: 'pipeline_value = 6 * 7' });
  assert.equal(first.isError, false, JSON.stringify(first).slice(0, 2000));
  const kernelId = sc(first).kernel_id;
  assert.equal(typeof kernelId, 'string', JSON.stringify(sc(first)));
  const listedBefore = await mine();
  assert.equal(listedBefore.executions_count, 1, JSON.stringify(listedBefore));
  const successBefore = await runs('success');
  const errorBefore = await runs('error');
  const sentAt = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

  const run = await notebook(kernelId, ['print(pipeline_value, "from the pipeline notebook")', 'raise ValueError("pipeline notebook boom")']);
  assert.equal(run.code, 0, `gwclient failed: ${run.stderr}${tail()}`);
  assert.deepEqual(run.events.filter((e) => e.event === 'reply').map((e) => e.status), ['ok', 'error']);

  // The execution log, as the agent searches it (its session, so its entries).
  const found = sc(await call('search_execution_logs', { query: 'from the pipeline notebook' }));
  assert.equal(found.results.length, 1, `search_execution_logs: ${JSON.stringify(found)}${tail()}`);
  const hit = found.results[0];
  assert.equal(hit.session_id, SESSION, JSON.stringify(hit));
  assert.equal(hit.status, 'success', JSON.stringify(hit));
  const entry = sc(await call('get_execution_log', { execution_id: hit.execution_id }));
  assert.equal(entry.tool, 'gateway', JSON.stringify(entry));
  assert.equal(entry.front_end, 'gateway', JSON.stringify(entry));
  assert.equal(entry.client_name, 'gwtest', 'the Jupyter header\'s username: ' + JSON.stringify(entry));
  assert.equal(entry.language, 'python');
  assert.equal(entry.code, 'print(pipeline_value, "from the pipeline notebook")');
  assert.equal(entry.stdout, '42 from the pipeline notebook\n', JSON.stringify(entry));
  const failed = sc(await call('search_execution_logs', { query: 'pipeline notebook boom' }));
  assert.equal(failed.results.length, 1, JSON.stringify(failed));
  assert.equal(failed.results[0].status, 'failed', JSON.stringify(failed));
  const failedEntry = sc(await call('get_execution_log', { execution_id: failed.results[0].execution_id }));
  assert.equal(failedEntry.tool, 'gateway');
  assert.match(failedEntry.error_message ?? '', /ValueError: pipeline notebook boom/, JSON.stringify(failedEntry));
  const byStatus = sc(await call('search_execution_logs', { status: 'failed' }));
  assert.ok(byStatus.results.some((r) => r.execution_id === failed.results[0].execution_id), JSON.stringify(byStatus));

  // The run metrics.
  assert.equal(await runs('success') - successBefore, 1, 'cellgate_runs_total{status="success"} counts the notebook cell');
  assert.equal(await runs('error') - errorBefore, 1, 'cellgate_runs_total{status="error"} counts the failed notebook cell');

  // The session, as list_sessions shows it.
  const listed = await mine();
  assert.equal(listed.executions_count, 3, JSON.stringify(listed));
  assert.ok(listed.last_activity_at >= sentAt && listed.last_activity_at >= listedBefore.last_activity_at,
    `last_activity_at ${listed.last_activity_at}, cells sent at ${sentAt}, before ${listedBefore.last_activity_at}`);

  // The agent's next run counts after them, and the gateway's kernel model moves with it.
  const kernelBefore = await get(`/api/kernels/${kernelId}`, `token ${TOKEN}`);
  assert.equal(kernelBefore.status, 200, JSON.stringify(kernelBefore));
  const again = await callExec(client, { language: 'python', session_id: SESSION, code: 'print(pipeline_value + 1)' });
  assert.equal(sc(again).stdout, '43\n', JSON.stringify(again).slice(0, 2000));
  assert.equal((await mine()).executions_count, 4);
  const kernelAfter = await get(`/api/kernels/${kernelId}`, `token ${TOKEN}`);
  assert.ok(kernelAfter.body.last_activity > kernelBefore.body.last_activity,
    `GET /api/kernels last_activity ${kernelAfter.body.last_activity}, before the agent's run ${kernelBefore.body.last_activity}`);
});

test('the notebook record of the session holds the gateway cells among the agent\'s', async () => {
  const exported = sc(await call('export_notebook', { session_id: SESSION }));
  assert.ok(exported.download_url, JSON.stringify(exported));
  const nb = JSON.parse(await (await fetch(exported.download_url)).text());
  const sources = nb.cells.map((c) => [c.source].flat().join(''));
  assert.deepEqual(sources, [
    'pipeline_value = 6 * 7',
    'print(pipeline_value, "from the pipeline notebook")',
    'raise ValueError("pipeline notebook boom")',
    'print(pipeline_value + 1)',
  ], JSON.stringify(nb.cells).slice(0, 3000));
});
