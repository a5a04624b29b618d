// The Jupyter gateway (issue 15) and the agent's kernel: an MCP client's session is a kernel
// that GET /api/kernels lists under the kernel_id its results carry; a notebook attached to
// it over the gateway's WebSocket (tests/gateway/gwclient.py, websocket-client) sees the
// agent's state, the agent gets session_busy while a notebook cell runs (and no longer once
// the kernel died under it), and DELETE of the agent's kernel over REST only detaches the
// front end. tests/gateway/test_gateway.py covers the rest of the API with a real Jupyter
// Server and nbclient.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';

import { openChannels } from './gateway_ws_raw.mjs';
import { REPO_ROOT, callExec, isBusy, sc, sleep, startHttpServer } from './lib.mjs';

const TOKEN = crypto.randomBytes(16).toString('hex');
const GWCLIENT = path.join(REPO_ROOT, 'tests', 'gateway', 'gwclient.py');
const SESSION = 's1';

let server;
let client;
let kernelId;

before(async () => {
  server = await startHttpServer({ args: ['--gateway-token', TOKEN] });
  ({ client } = await server.connect());
});

after(async () => {
  await server?.close();
});

// One REST request to the gateway; returns { status, body (parsed JSON or the text) }.
function rest(method, urlPath, { token = TOKEN, body } = {}) {
  return new Promise((resolve, reject) => {
    const headers = token ? { Authorization: `token ${token}` } : {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path: urlPath, headers }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        let parsed = data;
        try { parsed = data ? JSON.parse(data) : null; } catch {}
        resolve({ status: res.statusCode, body: parsed });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(JSON.stringify(body));
    req.end();
  });
}

const tail = () => `\n--- server stderr (tail) ---\n${server.stderrText().slice(-4000)}`;

// Runs cells in a kernel through the gateway's WebSocket with /usr/bin/python3 gwclient.py.
// onEvent(event) sees each JSON event line as it comes. Resolves { code, events, stderr }.
function notebook(kernel, cells, { onEvent, timeoutS = 60 } = {}) {
  const args = [GWCLIENT, '--url', `http://127.0.0.1:${server.port}`, '--token', TOKEN, '--kernel', kernel, '--timeout', String(timeoutS)];
  for (const cell of cells) args.push('--code', cell);
  const proc = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const events = [];
  let stderr = '';
  proc.stderr.on('data', (c) => { stderr += c; });
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    const event = JSON.parse(line);
    events.push(event);
    onEvent?.(event);
  });
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, events, stderr })));
}

const stdoutOf = (run) => run.events.filter((e) => e.event === 'stream' && e.name === 'stdout').map((e) => e.text).join('');
const busyCode = (r) => { const s = r.structuredContent ?? {}; return s.error ?? s.error_code; };

test("the agent's session is a kernel: kernel_id in the result, listed by GET /api/kernels", async () => {
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: 'agent_value = 41 + 1' });
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  const listed = await rest('GET', '/api/kernels');
  assert.equal(listed.status, 200, JSON.stringify(listed));
  kernelId = sc(r).kernel_id;
  if (kernelId === undefined && listed.body.length === 1) {
    // Without kernel_id in the result, the later tests still run on the one kernel listed
    // (this server has no other session); this test fails all the same.
    kernelId = listed.body[0].id;
    assert.fail(`no kernel_id in the result (GET /api/kernels lists ${JSON.stringify(listed.body)}): ${JSON.stringify(sc(r))}`);
  }
  assert.equal(typeof kernelId, 'string', `no kernel_id in ${JSON.stringify(sc(r))}; GET /api/kernels: ${JSON.stringify(listed.body)}`);
  const model = listed.body.find((k) => k.id === kernelId);
  assert.ok(model, `kernel ${kernelId} not in ${JSON.stringify(listed.body)}${tail()}`);
  assert.equal(model.name, 'python3');
  const one = await rest('GET', `/api/kernels/${kernelId}`);
  assert.equal(one.status, 200, JSON.stringify(one));
  assert.equal(one.body.id, kernelId);
  // A second call in s1 carries the same one.
  const again = await callExec(client, { language: 'python', session_id: SESSION, code: 'pass' });
  assert.equal(sc(again).kernel_id, kernelId);
});

test("a notebook attached to the agent's kernel sees its state", async () => {
  assert.ok(kernelId, 'needs the first test');
  const run = await notebook(kernelId, ['print(agent_value)']);
  assert.equal(run.code, 0, `gwclient failed: ${run.stderr}${tail()}`);
  assert.equal(stdoutOf(run), '42\n', JSON.stringify(run.events));
  assert.deepEqual(run.events.filter((e) => e.event === 'reply').map((e) => e.status), ['ok']);
  // And the agent sees what the notebook set.
  const set = await notebook(kernelId, ['notebook_value = agent_value * 2']);
  assert.equal(set.code, 0, set.stderr);
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: 'print(notebook_value)' });
  assert.equal(sc(r).stdout, '84\n', JSON.stringify(r).slice(0, 2000));
});

test("while a notebook cell runs, the agent's execute_code gets session_busy; afterwards it runs", async () => {
  assert.ok(kernelId, 'needs the first test');
  let busy;
  const started = new Promise((resolve) => { busy = resolve; });
  const cell = notebook(kernelId, ['import time; time.sleep(8)'], { onEvent: (e) => { if (e.event === 'busy') busy(); } });
  let timer;
  await Promise.race([started, new Promise((resolve) => { timer = setTimeout(resolve, 30000); })]);
  clearTimeout(timer);
  await sleep(500);
  const t0 = Date.now();
  const refused = await callExec(client, { language: 'python', session_id: SESSION, code: 'print("agent")' });
  const waited = Date.now() - t0;
  const said = `after ${waited} ms: ${JSON.stringify(refused.structuredContent ?? refused).slice(0, 1500)}`;
  assert.equal(busyCode(refused), 'session_busy', said);
  assert.equal(refused.isError, true, said);
  assert.ok(waited < 5000, `session_busy should come at once, not after the cell: ${said}`);
  const done = await cell;
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual(done.events.filter((e) => e.event === 'reply').map((e) => e.status), ['ok']);
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: 'print("agent again", agent_value)' });
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  assert.equal(sc(r).stdout, 'agent again 42\n');
});

test("a notebook cell sent while the agent's call runs waits for it in the kernel's queue", async () => {
  assert.ok(kernelId, 'needs the first test');
  const agent = callExec(client, { language: 'python', session_id: SESSION, code: 'import time\ntime.sleep(3)\nqueued = "after the agent"' });
  await sleep(1000);
  const run = await notebook(kernelId, ['print(queued)']);
  assert.equal(run.code, 0, `gwclient failed: ${run.stderr}${tail()}`);
  assert.equal(stdoutOf(run), 'after the agent\n', JSON.stringify(run.events));
  assert.equal((await agent).isError, false);
});

test("the agent's kernel opened by kernelspec attach-<id> or env KERNEL_ID, not a new one", async () => {
  assert.ok(kernelId, 'needs the first test');
  const specs = await rest('GET', '/api/kernelspecs');
  assert.equal(specs.status, 200, JSON.stringify(specs));
  assert.ok(specs.body.kernelspecs[`attach-${kernelId}`], `no attach-${kernelId} in ${JSON.stringify(Object.keys(specs.body.kernelspecs))}`);
  const before = (await rest('GET', '/api/kernels')).body.length;
  const byName = await rest('POST', '/api/kernels', { body: { name: `attach-${kernelId}`, env: {} } });
  assert.equal(byName.status, 201, JSON.stringify(byName));
  assert.equal(byName.body.id, kernelId);
  const byEnv = await rest('POST', '/api/kernels', { body: { name: 'python3', env: { KERNEL_ID: kernelId } } });
  assert.equal(byEnv.status, 201, JSON.stringify(byEnv));
  assert.equal(byEnv.body.id, kernelId);
  assert.equal((await rest('GET', '/api/kernels')).body.length, before, 'attaching started a kernel');
  const unknown = await rest('POST', '/api/kernels', { body: { name: 'python3', env: { KERNEL_ID: '00000000-0000-4000-8000-000000000000' } } });
  assert.equal(unknown.status, 404, JSON.stringify(unknown));
});

test("restarting the agent's kernel while its call runs is 409; interrupting ends the call interrupted", async () => {
  assert.ok(kernelId, 'needs the first test');
  const agent = callExec(client, { language: 'python', session_id: SESSION, code: 'import time\ntime.sleep(6)\nprint("not interrupted")' });
  await sleep(1500);
  const restart = await rest('POST', `/api/kernels/${kernelId}/restart`, { body: {} });
  assert.equal(restart.status, 409, JSON.stringify(restart));
  const interrupt = await rest('POST', `/api/kernels/${kernelId}/interrupt`, { body: {} });
  assert.equal(interrupt.status, 204, JSON.stringify(interrupt));
  const r = await agent;
  assert.equal(r.isError, true, JSON.stringify(r).slice(0, 2000));
  assert.doesNotMatch(sc(r).stdout ?? '', /not interrupted/);
  assert.match(JSON.stringify(sc(r)), /KeyboardInterrupt|interrupt/i, JSON.stringify(sc(r)).slice(0, 2000));
  const after = await callExec(client, { language: 'python', session_id: SESSION, code: 'print(agent_value)' });
  assert.equal(sc(after).stdout, '42\n', 'the interrupt kept the state');
});

// Found by the soak (tests/soak, issue 30): the kernel killed while a notebook's cell ran left
// the notebook without an answer and the session busy for the agent as long as the WebSocket
// stayed open. The gateway sees the kernel's process end: it closes the notebook's connection
// (1011, "the kernel died") and the agent's next call restarts the kernel.
test("a kernel killed while a notebook cell runs: the notebook is told, the agent's next call runs", async () => {
  const sid = 'gw_killed';
  const first = await callExec(client, { language: 'python', session_id: sid, code: 'print(1)' });
  const ch = await openChannels(server.port, TOKEN, sc(first).kernel_id);
  const msgId = ch.execute("import time\nprint('started', flush=True)\ntime.sleep(300)");
  await ch.waitFor((m) => m.msg_type === 'stream' && m.parent_header?.msg_id === msgId);
  const listed = await client.callTool({ name: 'list_sessions', arguments: {} });
  const pid = sc(listed).sessions.find((s) => s.session_id === sid).pid;
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 600 && ch.closeFrame === null; i++) await sleep(100);
  assert.equal(ch.closeFrame, 1011, `the notebook's connection was not closed: ${tail()}`);
  let after;
  for (let i = 0; i < 20; i++) {
    after = await callExec(client, { language: 'python', session_id: sid, code: 'print(6 * 7)' });
    if (!isBusy(after)) break;
    await sleep(500);
  }
  assert.equal(sc(after).stdout, '42\n', JSON.stringify(sc(after)).slice(0, 800));
  assert.equal(sc(after).kernel_restarted, true);
  ch.end();
  await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
});

// Found by the soak too: a notebook that attached to a kernel already dead waited for ever
// (what it sent is held until the kernel answers, and nothing restarted it).
test("a notebook attaching to a kernel that died is told; the agent's next call restarts it", async () => {
  const sid = 'gw_dead';
  const first = await callExec(client, { language: 'python', session_id: sid, code: 'print(1)' });
  const listed = await client.callTool({ name: 'list_sessions', arguments: {} });
  const pid = sc(listed).sessions.find((s) => s.session_id === sid).pid;
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100 && fs.existsSync(`/proc/${pid}`); i++) await sleep(100);
  const ch = await openChannels(server.port, TOKEN, sc(first).kernel_id);
  ch.execute("print('never')");
  for (let i = 0; i < 600 && ch.closeFrame === null; i++) await sleep(100);
  assert.equal(ch.closeFrame, 1011, `the notebook's connection was not closed: ${tail()}`);
  const after = await callExec(client, { language: 'python', session_id: sid, code: 'print(6 * 7)' });
  assert.equal(sc(after).stdout, '42\n', JSON.stringify(sc(after)).slice(0, 800));
  assert.equal(sc(after).kernel_restarted, true);
  await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
});

test("DELETE of the agent's kernel over REST only detaches; close_session removes it", async () => {
  assert.ok(kernelId, 'needs the first test');
  const del = await rest('DELETE', `/api/kernels/${kernelId}`);
  assert.equal(del.status, 204, JSON.stringify(del));
  const still = await callExec(client, { language: 'python', session_id: SESSION, code: 'print(agent_value)' });
  assert.equal(sc(still).stdout, '42\n', 'the DELETE left the session alone');
  const closed = await client.callTool({ name: 'close_session', arguments: { session_id: SESSION } }, undefined, { timeout: 120000 });
  assert.equal(closed.isError, false, JSON.stringify(closed));
  const gone = await rest('GET', `/api/kernels/${kernelId}`);
  assert.equal(gone.status, 404, JSON.stringify(gone));
  const listed = await rest('GET', '/api/kernels');
  assert.ok(!listed.body.some((k) => k.id === kernelId), JSON.stringify(listed.body));
});
