// Operations: the public base URL in every link (and the address actually bound in the
// log), the Prometheus /metrics endpoint behind the bearer token, and the periodic orphan
// sweep removing what a SIGKILLed server left while another server keeps running on the
// same state dir.

import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { serverBinary, sleep, startRawServer } from './lib.mjs';

const TOKEN = 'ops-test-token-0123456789abcdef';
const PUBLIC = 'http://sandbox.example:8080/prefix';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
// The operator routes' own token (/metrics): not the MCP clients'.
const ADMIN_TOKEN = 'ops-e2e-admin-token-0123456789';
const ADMIN_AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };

// True when a mount point lies at or below DIR (then DIR is left for inspection).
function hasMounts(dir) {
  const text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  return text.split('\n').some((line) => {
    const point = (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    return point === dir || point.startsWith(dir + '/');
  });
}

function removeState(dir) {
  if (!hasMounts(dir)) fs.rmSync(dir, { recursive: true, force: true });
}

// Every container the server's runtime(s) know in STATE (ids).
function containers(state) {
  const ids = [];
  for (const entry of fs.existsSync(state) ? fs.readdirSync(state) : []) {
    const m = entry.match(/^runtime-(runc|crun)$/);
    if (!m) continue;
    const out = execFileSync(m[1], ['--root', path.join(state, entry), 'list', '-q'], { encoding: 'utf8' });
    ids.push(...out.split('\n').filter(Boolean));
  }
  return ids;
}

// `cellgate mcp --http LISTEN ...args` on a fresh state dir; waits for the bound port.
async function startListening(listen, args, env = {}) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-ops-'));
  const proc = spawn(serverBinary(), ['mcp', '--state-dir', state, '--http', listen, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  proc.stderr.on('data', (chunk) => { log = (log + chunk).slice(-64000); });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/[.[\]]/g, '\\$&');
  const pattern = new RegExp(`listening on http://${host}:(\\d+)/`);
  let port;
  for (let i = 0; i < 300 && !port && proc.exitCode === null; i++) {
    const m = log.match(pattern);
    if (m) port = Number(m[1]);
    else await sleep(50);
  }
  const close = async () => {
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
    removeState(state);
  };
  if (!port) {
    await close();
    throw new Error(`cellgate --http ${listen} did not log its bound address:\n${log}`);
  }
  return { port, state, log: () => log, close };
}

// Starts a server (startListening) with the token and connects an SDK client to it.
// Returns { server, client, call(name, args), close() }.
async function startWithClient(listen, args = []) {
  const server = await startListening(listen, ['--http-token', TOKEN, '--admin-token', ADMIN_TOKEN, ...args]);
  const client = new Client({ name: 'ops-e2e', version: '0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`), {
    requestInit: { headers: AUTH },
  });
  try {
    await client.connect(transport, { timeout: 30000 });
  } catch (err) {
    await server.close();
    throw err;
  }
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  const close = async () => {
    await client.close().catch(() => {});
    await server.close();
  };
  return { server, client, call, close };
}

const ok = (r) => {
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  return r.structuredContent;
};

// A public link mapped back to the server on PORT: the proxy in front strips the prefix.
const local = (url, port) => {
  assert.ok(url.startsWith(`${PUBLIC}/files/`), `a link on the public base: ${url}`);
  return `http://127.0.0.1:${port}${url.slice(PUBLIC.length)}`;
};

test('with --public-url every link uses it (trailing slash stripped); the log names the address bound', async () => {
  const { server, call, close } = await startWithClient('0.0.0.0:0', ['--public-url', `${PUBLIC}/`]);
  try {
    assert.match(server.log(), new RegExp(`http: listening on http://0\\.0\\.0\\.0:${server.port}/`));
    assert.match(server.log(), /links use the public URL http:\/\/sandbox\.example:8080\/prefix\n/);
    assert.match(server.log(), /serving MCP at http:\/\/0\.0\.0\.0:\d+\/mcp, for clients http:\/\/sandbox\.example:8080\/prefix\/mcp/);

    const up = ok(await call('upload_file', { session_id: 'pub', filename: 'in.csv', content_base64: Buffer.from('a,b\n1,2\n').toString('base64') }));
    assert.ok(up.download_url.startsWith(`${PUBLIC}/files/pub/in.csv?token=`), up.download_url);

    const run = await call('run_python', { session_id: 'pub', code: "open('/mnt/data/out.txt', 'w').write('hello')\nprint('x' * 200000)" });
    const s = ok(run);
    const out = s.artifacts.find((a) => a.filename === 'out.txt');
    assert.ok(out, JSON.stringify(s.artifacts));
    assert.ok(s.stdout_url, 'a long output is saved and linked');
    const links = [out.download_url, s.stdout_url];
    const listed = ok(await call('list_artifacts', { session_id: 'pub' }));
    links.push(...listed.artifacts.map((a) => a.download_url));
    const read = ok(await call('read_artifact', { session_id: 'pub', path: 'out.txt' }));
    links.push(read.download_url);
    for (const url of links) local(url, server.port);
    for (const r of [run, up]) {
      const text = JSON.stringify(r);
      assert.ok(!/https?:\/\/(127\.0\.0\.1|0\.0\.0\.0)/.test(text), `no local address in a result: ${text.slice(0, 2000)}`);
    }

    const res = await fetch(local(out.download_url, server.port));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hello');
  } finally {
    await close();
  }
});

test('a bad --public-url or CELLGATE_PUBLIC_URL is refused at start-up, saying why', () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-ops-bad-'));
  try {
    const cases = [
      ['ftp://sandbox.example', /use an http:\/\/ or https:\/\/ URL/],
      ['http://sandbox.example/p?x=1', /no query \(\?\) or fragment \(#\)/],
      ['http://sandbox.example#top', /no query \(\?\) or fragment \(#\)/],
      ['http://user:pw@sandbox.example', /no user or password/],
      ['http://sandbox.example:0', /port is not a number from 1 to 65535/],
      ['http://', /has no host/],
    ];
    for (const [url, why] of cases) {
      const byFlag = spawnSync(serverBinary(), ['mcp', '--state-dir', state, '--http-listen', 'off', '--public-url', url], { input: '', encoding: 'utf8', timeout: 30000 });
      assert.equal(byFlag.status, 2, `${url}: ${byFlag.stderr}`);
      assert.match(byFlag.stderr, new RegExp(`--public-url: '${url.replace(/[.?*+^$()[\]{}|\\]/g, '\\$&')}': `));
      assert.match(byFlag.stderr, why);
      const byEnv = spawnSync(serverBinary(), ['mcp', '--state-dir', state, '--http-listen', 'off'], {
        input: '', encoding: 'utf8', timeout: 30000, env: { ...process.env, CELLGATE_PUBLIC_URL: url },
      });
      assert.equal(byEnv.status, 2, `CELLGATE_PUBLIC_URL=${url}: ${byEnv.stderr}`);
      assert.match(byEnv.stderr, why);
    }
  } finally {
    removeState(state);
  }
});

// GET /metrics on PORT with HEADERS; returns { status, type, text }.
async function scrape(port, headers = ADMIN_AUTH) {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

// The value of the sample NAME{LABELS} (labels as written, '' for none), or undefined.
function sample(text, name, labels = '') {
  const key = labels ? `${name}{${labels}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(key));
  return line === undefined ? undefined : Number(line.slice(key.length));
}

test('/metrics: Prometheus text behind the token, and its counts follow the runs and downloads', async () => {
  const { server, call, close } = await startWithClient('127.0.0.1:0');
  try {
    assert.equal((await scrape(server.port, {})).status, 401, 'no token');
    assert.equal((await scrape(server.port, { Authorization: 'Bearer wrong-token-wrong-token' })).status, 401, 'wrong token');
    const first = await scrape(server.port);
    assert.equal(first.status, 200);
    assert.match(first.type, /^text\/plain; version=0\.0\.4/);
    // Every sample belongs to a family announced with # HELP and # TYPE.
    const typed = new Map();
    const helped = new Set();
    for (const line of first.text.trimEnd().split('\n')) {
      let m = line.match(/^# TYPE (\S+) (counter|gauge|histogram)$/);
      if (m) { typed.set(m[1], m[2]); continue; }
      m = line.match(/^# HELP (\S+) \S/);
      if (m) { helped.add(m[1]); continue; }
      m = line.match(/^([a-z_]+)(\{[^}]*\})? (\S+)$/);
      assert.ok(m, `a sample line: ${line}`);
      const family = typed.has(m[1]) ? m[1] : m[1].replace(/_(bucket|sum|count)$/, '');
      assert.ok(typed.has(family) && helped.has(family), `${m[1]} has # HELP and # TYPE lines`);
      assert.ok(Number.isFinite(Number(m[3])), line);
    }
    assert.equal(typed.get('cellgate_runs_total'), 'counter');
    assert.equal(typed.get('cellgate_run_duration_seconds'), 'histogram');
    assert.equal(typed.get('cellgate_sessions'), 'gauge');
    assert.equal(sample(first.text, 'cellgate_sandboxes_max'), 10);
    assert.equal(sample(first.text, 'cellgate_pool_sandboxes'), 0);

    const before = (name, labels) => sample(first.text, name, labels);
    ok(await call('execute_code', { language: 'python', session_id: 'm1', code: 'print(1)' }));
    const failed = await call('execute_code', { language: 'python', session_id: 'm1', code: 'raise ValueError("no")' });
    assert.equal(failed.isError, true);
    ok(await call('execute_code', { language: 'python', code: 'print("one-shot")' }));
    ok(await call('execute_code', { language: 'javascript', session_id: 'm2', code: '1 + 1' }));
    const up = ok(await call('upload_file', { session_id: 'm1', filename: 'blob.bin', content_base64: Buffer.alloc(3000, 7).toString('base64') }));
    assert.equal((await (await fetch(up.download_url)).arrayBuffer()).byteLength, 3000);

    const now = await scrape(server.port);
    const delta = (name, labels) => sample(now.text, name, labels) - before(name, labels);
    assert.equal(delta('cellgate_runs_total', 'status="success"'), 3, now.text);
    assert.equal(delta('cellgate_runs_total', 'status="error"'), 1, now.text);
    assert.equal(delta('cellgate_run_duration_seconds_count'), 4, now.text);
    assert.ok(sample(now.text, 'cellgate_run_duration_seconds_sum') > before('cellgate_run_duration_seconds_sum'));
    assert.equal(sample(now.text, 'cellgate_run_duration_seconds_bucket', 'le="+Inf"'), sample(now.text, 'cellgate_run_duration_seconds_count'));
    assert.equal(delta('cellgate_downloads_total'), 1);
    assert.equal(delta('cellgate_download_bytes_total'), 3000);
    assert.equal(sample(now.text, 'cellgate_sessions'), 2, now.text);
    assert.equal(sample(now.text, 'cellgate_sessions_by_language', 'language="python"'), 1, now.text);
    assert.equal(sample(now.text, 'cellgate_sessions_by_language', 'language="javascript"'), 1, now.text);
    assert.equal(sample(now.text, 'cellgate_oneshot_runs_in_flight'), 0);
    assert.ok(sample(now.text, 'cellgate_http_requests_total', 'route="/mcp",code="200"') > 0, now.text);
    assert.ok(sample(now.text, 'cellgate_http_requests_total', 'route="/metrics",code="401"') >= 2, now.text);
  } finally {
    await close();
  }
});

// The next message from a raw server S, or an error with its log when it exits first.
function next(s) {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null)
    return Promise.reject(new Error(`the server has exited:\n${s.stderr()}`));
  return Promise.race([
    s.next(),
    new Promise((resolve, reject) => s.proc.on('exit', () => reject(new Error(`the server exited:\n${s.stderr()}`)))),
  ]);
}

test('the periodic sweep removes what a SIGKILLed server left while another keeps its sessions', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-sweep-'));
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sweep', version: '0' } } };
  const exec = (id, code, session_id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code, session_id } } });
  const doomed = startRawServer(state);
  let keeper;
  try {
    doomed.send(init);
    await next(doomed);
    doomed.send(exec(1, 'x = 1', 'left_behind'));
    assert.equal((await next(doomed)).result.structuredContent.status, 'success');
    const [dead] = fs.readdirSync(path.join(state, 'instances'));
    const deadPrefix = `cg-${dead}-`;
    assert.equal(containers(state).filter((id) => id.startsWith(deadPrefix)).length, 1);

    // The keeper starts while the other server lives: its start-up clean-up leaves it be.
    keeper = startRawServer(state, { args: ['--cleanup-interval', '0.05'] });
    keeper.send(init);
    await next(keeper);
    keeper.send(exec(1, 'x = 41', 'live'));
    assert.equal((await next(keeper)).result.structuredContent.status, 'success');
    assert.ok(fs.existsSync(path.join(state, 'instances', dead)), 'a live server is not swept');

    doomed.proc.kill('SIGKILL');
    await new Promise((resolve) => doomed.proc.on('exit', resolve));
    assert.equal(containers(state).filter((id) => id.startsWith(deadPrefix)).length, 1, 'the killed server left its sandbox');

    for (let i = 0; i < 120; i++) {
      if (!fs.existsSync(path.join(state, 'instances', dead))) break;
      await sleep(500);
    }
    assert.ok(!fs.existsSync(path.join(state, 'instances', dead)), `the sweep removed the dead instance\n${keeper.stderr()}`);
    assert.deepEqual(containers(state).filter((id) => id.startsWith(deadPrefix)), [], 'its sandbox is gone');
    assert.ok(!hasMounts(path.join(state, 'instances', dead)), 'its workspace is unmounted');
    assert.match(keeper.stderr(), new RegExp(`removed 1 sandbox\\(es\\) left by a stopped server \\(instance ${dead}\\)`));
    assert.match(keeper.stderr(), new RegExp(`removed the state a stopped server left \\(instance ${dead}\\)`));

    keeper.send(exec(2, 'print(x + 1)', 'live'));
    const r = (await next(keeper)).result.structuredContent;
    assert.equal(r.stdout, '42\n', 'the live session kept its sandbox and state');
    assert.equal(containers(state).length, 1, 'only the live sandbox runs');
  } finally {
    if (doomed.proc.exitCode === null && doomed.proc.signalCode === null) {
      doomed.proc.stdin.end(); // not killed: let it remove its own sandbox
      await new Promise((resolve) => doomed.proc.on('exit', resolve));
    }
    if (keeper) {
      keeper.proc.stdin.end();
      await new Promise((resolve) => (keeper.proc.exitCode !== null ? resolve() : keeper.proc.on('exit', resolve)));
    }
    removeState(state);
  }
});
