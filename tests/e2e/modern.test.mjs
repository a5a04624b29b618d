// MCP 2026-07-28 (stateless, "modern" requests: per-request _meta, no initialize) through the
// official SDK v2 client (@modelcontextprotocol/client, versionNegotiation pinned to 2026-07-28,
// and once 'auto'), over stdio and Streamable HTTP: server/discover, tools, the end-to-end
// execute_code scenarios (print, an error, session state, JavaScript, input() at EOF), workspace
// files as resources; a legacy (SDK v1, initialize) client beside a modern one on one HTTP
// server, isolated both ways. Then the raw protocol the SDK would never send wrong: the _meta
// checks (-32602, -32022), legacy methods with modern _meta (-32601, HTTP 404), the HTTP header
// checks (-32020, 400), resultType on every result, ttlMs/cacheScope on lists and reads.
// Note: on stdio the SDK's pin/auto negotiation spawns a short-lived probe copy of the server
// (same arguments, same state dir) before the real one.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { callExec as callExecV1, expectStatus, isBusy, sc, serverBinary, show, sleep, startHttpServer, startRawServer } from './lib.mjs';

const V = '2026-07-28';
const PIN = { pin: V };
const K = {
  version: 'io.modelcontextprotocol/protocolVersion',
  caps: 'io.modelcontextprotocol/clientCapabilities',
  info: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
};
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const CALL = { timeout: 120000 };
// execute_code through either client: SDK v2's callTool(params, options), SDK v1's callTool(params, schema, options).
const callExec = (client, args) =>
  client instanceof Client ? client.callTool({ name: 'execute_code', arguments: args }, CALL) : callExecV1(client, args);
const uriOf = (sid, rel) => `cellgate://sessions/${sid}/files/${rel.split('/').map(encodeURIComponent).join('/')}`;

// ---------------------------------------------------------------------------------------------
// helpers

function hasMounts(dir) {
  try {
    const prefix = dir.endsWith('/') ? dir : dir + '/';
    return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => {
      const mp = l.split(' ')[4];
      return mp && (mp === dir || mp.startsWith(prefix));
    });
  } catch {
    return false;
  }
}

function removeStateDir(dir) {
  if (hasMounts(dir)) process.stderr.write(`modern e2e: state dir ${dir} still has mounts, not removed\n`);
  else fs.rmSync(dir, { recursive: true, force: true });
}

function v2Client(name, mode = PIN, capabilities = {}) {
  return new Client({ name, version: '0.0.0' }, { capabilities, versionNegotiation: { mode } });
}

/** cellgate over stdio with an SDK v2 client. Returns { client, stderrText(), close() }. */
async function startModernStdio({ mode = PIN, args = [], name = 'cellgate-e2e-modern' } = {}) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-modern-'));
  const transport = new StdioClientTransport({
    command: serverBinary(),
    args: ['mcp', '--state-dir', stateDir, ...args],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c) => { stderr = (stderr + c.toString('utf8')).slice(-65536); });
  const client = v2Client(name, mode);
  const close = async () => {
    await client.close().catch(() => {});
    removeStateDir(stateDir);
  };
  try {
    await client.connect(transport, { timeout: 60000 });
  } catch (err) {
    await close();
    throw new Error(`SDK v2 client (${JSON.stringify(mode)}) could not connect over stdio: ${err.stack}\n--- server stderr ---\n${stderr}`);
  }
  return { client, stateDir, stderrText: () => stderr, close };
}

/** An SDK v2 client connected to a running cellgate HTTP server. */
async function connectModernHttp(url, { mode = PIN, headers, name = 'cellgate-e2e-modern-http' } = {}) {
  const client = v2Client(name, mode);
  const transport = new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined);
  await client.connect(transport, { timeout: 60000 });
  return client;
}

function meta(overrides = {}) {
  return {
    [K.version]: V,
    [K.info]: { name: 'cellgate-e2e-raw', version: '0.0.0' },
    [K.caps]: {},
    ...overrides,
  };
}

let rawId = 1000;
/** A modern JSON-RPC request: params with _meta (metaOverride replaces the whole _meta when given). */
function modernRequest(method, params = {}, metaObject = meta()) {
  return { jsonrpc: '2.0', id: rawId++, method, params: { ...params, _meta: metaObject } };
}

/** The headers the SDK v2 client would set for this request. */
function modernHeaders(message) {
  const p = message.params ?? {};
  const h = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': p._meta?.[K.version] ?? V,
    'Mcp-Method': message.method,
  };
  const name = ['tools/call', 'prompts/get'].includes(message.method) ? p.name : message.method === 'resources/read' ? p.uri : undefined;
  if (name !== undefined) h['Mcp-Name'] = String(name);
  return h;
}

/** POSTs a message; returns { status, headers, msg (the response with its id), text }. */
async function post(url, message, headers) {
  const res = await fetch(url, { method: 'POST', headers, body: typeof message === 'string' ? message : JSON.stringify(message) });
  const text = await res.text();
  let msgs = [];
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    msgs = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  } else if (text.trim()) {
    try {
      msgs = [JSON.parse(text)];
    } catch {}
  }
  const msg = msgs.find((m) => m.id === message.id && ('result' in m || 'error' in m)) ?? msgs.find((m) => 'result' in m || 'error' in m);
  const serverRequests = msgs.filter((m) => m.method && 'id' in m);
  return { status: res.status, headers: res.headers, msg, text, serverRequests };
}

const describeExchange = (message, answer) =>
  `request: ${JSON.stringify(message)}\nanswer: ${answer.status ?? ''} ${answer.text ?? JSON.stringify(answer.msg)}`.slice(0, 6000);

/** Asserts the answer is a JSON-RPC error with this code (and HTTP status when over HTTP). */
function expectError(message, answer, code, httpStatus) {
  const d = describeExchange(message, answer);
  assert.ok(answer.msg?.error, `expected JSON-RPC error ${code}\n${d}`);
  assert.equal(answer.msg.error.code, code, d);
  assert.deepEqual(answer.msg.id, message.id, `the error carries the request's id\n${d}`);
  if (httpStatus !== undefined) assert.equal(answer.status, httpStatus, `HTTP status\n${d}`);
  return answer.msg.error;
}

/** Asserts the answer is a result with resultType "complete" (and cache fields when asked). */
function expectComplete(message, answer, { cacheable = false, httpStatus } = {}) {
  const d = describeExchange(message, answer);
  assert.ok(answer.msg && 'result' in answer.msg, `expected a result\n${d}`);
  const r = answer.msg.result;
  assert.equal(r.resultType, 'complete', `every modern result has resultType "complete"\n${d}`);
  if (cacheable) {
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs must be an integer >= 0\n${d}`);
    assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope must be public or private\n${d}`);
  }
  if (httpStatus !== undefined) assert.equal(answer.status, httpStatus, `HTTP status\n${d}`);
  return r;
}

/** Raw stdio: the answer to one request (notifications before it are skipped). */
async function askStdio(raw, message, timeoutMs = 120000) {
  raw.send(message);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let timer;
    const m = await Promise.race([
      raw.next(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer to ${JSON.stringify(message)}\n--- stderr ---\n${raw.stderr()}`)), Math.max(1, deadline - Date.now())); }),
    ]);
    clearTimeout(timer);
    if (m.id === message.id && ('result' in m || 'error' in m)) return { msg: m, text: JSON.stringify(m) };
    if (m.method && 'id' in m) throw new Error(`the server sent a request on a modern exchange (forbidden): ${JSON.stringify(m)}`);
  }
}

async function stopRaw(raw) {
  const exited = new Promise((r) => (raw.proc.exitCode !== null ? r() : raw.proc.on('exit', r)));
  raw.proc.stdin.end();
  const t = setTimeout(() => raw.proc.kill('SIGTERM'), 10000);
  const k = setTimeout(() => raw.proc.kill('SIGKILL'), 30000);
  await exited;
  clearTimeout(t);
  clearTimeout(k);
}

// ---------------------------------------------------------------------------------------------
// The end-to-end scenarios through the SDK v2 client, over stdio and over HTTP.

function scenarios(label, setup) {
  describe(`${label}: SDK v2 client pinned to ${V}`, () => {
    let ctx;
    let client;
    before(async () => {
      ctx = await setup();
      client = ctx.client;
    });
    after(async () => {
      await ctx?.close();
    });
    const srv = () => ({ stderrText: ctx.stderrText });

    test('the connection is modern, negotiated by server/discover', async () => {
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), V);
      const d = await client.discover();
      assert.ok(Array.isArray(d.supportedVersions), JSON.stringify(d));
      for (const v of [V, '2025-11-25']) assert.ok(d.supportedVersions.includes(v), `supportedVersions lacks ${v}: ${JSON.stringify(d)}`);
      assert.ok(d.capabilities?.tools, `capabilities.tools: ${JSON.stringify(d)}`);
      assert.ok(d.capabilities?.resources, `capabilities.resources: ${JSON.stringify(d)}`);
      assert.equal(d.capabilities.tasks, undefined, 'no 2025 tasks capability on a modern discover');
      const info = d._meta?.[K.serverInfo] ?? client.getServerVersion();
      assert.equal(info?.name, 'cellgate', `serverInfo: ${JSON.stringify(d)}`);
      assert.ok(Number.isInteger(d.ttlMs) && d.ttlMs >= 0, `ttlMs: ${JSON.stringify(d)}`);
      assert.ok(['public', 'private'].includes(d.cacheScope), `cacheScope: ${JSON.stringify(d)}`);
      assert.deepEqual(client.getDiscoverResult()?.supportedVersions, d.supportedVersions);
    });

    test('tools/list has execute_code with its schemas', async () => {
      const { tools } = await client.listTools(undefined, { cacheMode: 'bypass' });
      const tool = tools.find((t) => t.name === 'execute_code');
      assert.ok(tool, `execute_code missing: ${tools.map((t) => t.name).join(', ')}`);
      assert.equal(tool.inputSchema.type, 'object');
      for (const name of ['language', 'code']) assert.ok(tool.inputSchema.required.includes(name), name);
      assert.equal(tool.outputSchema?.type, 'object');
    });

    test('python print: exact stdout', async () => {
      const r = await callExec(client, { language: 'python', code: "print('Hello, World!')" });
      const s = expectStatus(r, 'success', srv());
      assert.equal(s.stdout, 'Hello, World!\n');
      assert.equal(s.exit_code, 0);
      assert.match(s.execution_id, /^exec_[0-9a-f]{12}$/);
    });

    test('an exception is an execution_error with RUNTIME_ERROR', async () => {
      const r = await callExec(client, { language: 'python', code: '1/0' });
      const s = expectStatus(r, 'execution_error', srv());
      assert.equal(s.error_code, 'RUNTIME_ERROR');
      assert.ok(s.stderr.includes('ZeroDivisionError'), show(r, srv()));
    });

    test('state is kept across two calls with a session_id', async () => {
      const sid = `sess_modern${label === 'stdio' ? 'st' : 'ht'}state1`;
      let s = expectStatus(await callExec(client, { language: 'python', code: 'x = 41', session_id: sid }), 'success', srv());
      assert.equal(s.session_id, sid);
      const r = await callExec(client, { language: 'python', code: 'print(x + 1)', session_id: sid });
      s = expectStatus(r, 'success', srv());
      assert.equal(s.stdout, '42\n', show(r, srv()));
      assert.equal(s.session_id, sid);
    });

    test('state is not kept without a session_id', async () => {
      expectStatus(await callExec(client, { language: 'python', code: 'y = 5' }), 'success', srv());
      const r = await callExec(client, { language: 'python', code: 'print(y)' });
      assert.ok(expectStatus(r, 'execution_error', srv()).stderr.includes('NameError'), show(r, srv()));
    });

    test('javascript runs, and keeps state in its session', async () => {
      const sid = `sess_modern${label === 'stdio' ? 'st' : 'ht'}js0001`;
      let r = await callExec(client, { language: 'javascript', code: 'console.log(6 * 7)' });
      assert.equal(expectStatus(r, 'success', srv()).stdout, '42\n', show(r, srv()));
      expectStatus(await callExec(client, { language: 'javascript', code: 'var z = 20', session_id: sid }), 'success', srv());
      r = await callExec(client, { language: 'javascript', code: 'console.log(z + 1)', session_id: sid });
      assert.equal(expectStatus(r, 'success', srv()).stdout, '21\n', show(r, srv()));
    });

    test('input() in a modern call fails at once (EOF, no elicitation); stdin still feeds it', async () => {
      const r = await callExec(client, { language: 'python', code: "name = input('who? ')\nprint('never', name)", timeout: 60 });
      const s = expectStatus(r, 'execution_error', srv());
      assert.equal(s.timed_out, false, show(r, srv()));
      // cellgate's stdin-less input() without elicitation raises StdinNotImplementedError; EOFError is fine too
      assert.match(s.stderr, /EOFError|StdinNotImplementedError/, show(r, srv()));
      assert.ok(!s.stdout.includes('never'), show(r, srv()));
      const fed = await callExec(client, { language: 'python', code: "print('hi', input())", stdin: 'Ada\n' });
      assert.equal(expectStatus(fed, 'success', srv()).stdout, 'hi Ada\n');
    });

    test('a file the run made: linked in the result, listed and read as a resource', async () => {
      const sid = `sess_modern${label === 'stdio' ? 'st' : 'ht'}files1`;
      const r = await callExec(client, {
        language: 'python',
        session_id: sid,
        code: "open('/mnt/data/notes.txt', 'w').write('hello modern\\n')\nopen('/mnt/data/pixel.png', 'wb').write(bytes(range(256)))",
      });
      expectStatus(r, 'success', srv());
      const uri = uriOf(sid, 'notes.txt');
      const link = r.content.find((c) => c.type === 'resource_link' && c.uri === uri);
      assert.ok(link, `no resource_link to ${uri}: ${show(r, srv())}`);
      const { resources } = await client.listResources(undefined, { cacheMode: 'bypass' });
      const listed = resources.find((x) => x.uri === uri);
      assert.ok(listed, `${uri} not in resources/list: ${JSON.stringify(resources)}`);
      assert.equal(listed.mimeType, 'text/plain');
      assert.equal(listed.size, 13);
      const { resourceTemplates } = await client.listResourceTemplates(undefined, { cacheMode: 'bypass' });
      assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'cellgate://sessions/{session_id}/files/{path}'), JSON.stringify(resourceTemplates));
      const read = await client.readResource({ uri }, { cacheMode: 'bypass' });
      assert.deepEqual(read.contents, [{ uri, mimeType: 'text/plain', text: 'hello modern\n' }]);
      const bin = await client.readResource({ uri: uriOf(sid, 'pixel.png') }, { cacheMode: 'bypass' });
      assert.equal(Buffer.from(bin.contents[0].blob, 'base64').length, 256);
    });

    test('an unknown resource is -32602 (2026: not -32002)', async () => {
      await assert.rejects(client.readResource({ uri: uriOf('sess_modernnone01', 'missing.txt') }, { cacheMode: 'bypass' }), (err) => {
        assert.equal(err.code, -32602, `${err.code} ${err.message}`);
        return true;
      });
    });

    // 2026-07-28: the SDK cancels with notifications/cancelled on stdio and by closing the
    // request's response stream over HTTP ("the server MUST treat a client disconnect as cancellation").
    test('aborting a call cancels its cell: the session is free at once and keeps its state', async () => {
      const sid = `sess_modern${label === 'stdio' ? 'st' : 'ht'}cancel`;
      expectStatus(await callExec(client, { language: 'python', session_id: sid, code: 'v = 7' }), 'success', srv());
      const ac = new AbortController();
      const slow = client.callTool(
        { name: 'execute_code', arguments: { language: 'python', session_id: sid, code: 'import time\ntime.sleep(90)\nv = 8', timeout: 120 } },
        { timeout: 150000, signal: ac.signal },
      );
      await sleep(2500);
      ac.abort('test aborts');
      await assert.rejects(slow);
      const t0 = Date.now();
      let r;
      for (;;) {
        r = await callExec(client, { language: 'python', session_id: sid, code: 'print(v)' });
        if (!isBusy(r) || Date.now() - t0 > 30000) break;
        await sleep(500);
      }
      const waited = Date.now() - t0;
      const s = expectStatus(r, 'success', srv());
      assert.equal(s.stdout, '7\n', `the aborted cell ran on (v = 8) instead of being cancelled: ${show(r, srv())}`);
      assert.ok(waited < 20000, `the session was held ${waited} ms after the abort: the cell was not cancelled`);
    });

    test('list_sessions lists the sessions this client made', async () => {
      const sid = `sess_modern${label === 'stdio' ? 'st' : 'ht'}state1`;
      const r = await client.callTool({ name: 'list_sessions', arguments: {} }, CALL);
      assert.ok(sc(r).sessions.some((x) => x.session_id === sid), show(r, srv()));
    });
  });
}

scenarios('stdio', () => startModernStdio());

scenarios('HTTP', async () => {
  const http = await startHttpServer();
  let client;
  try {
    client = await connectModernHttp(http.url);
  } catch (err) {
    await http.close();
    throw new Error(`SDK v2 client could not connect over HTTP: ${err.stack}\n--- server stderr ---\n${http.stderrText()}`);
  }
  return {
    client,
    stderrText: http.stderrText,
    close: async () => {
      await client.close().catch(() => {});
      await http.close();
    },
  };
});

describe("versionNegotiation mode 'auto' finds the modern era", () => {
  test('stdio', async () => {
    const s = await startModernStdio({ mode: 'auto' });
    try {
      assert.equal(s.client.getProtocolEra(), 'modern');
      assert.equal(s.client.getNegotiatedProtocolVersion(), V);
      const r = await callExec(s.client, { language: 'python', code: 'print(2 + 2)' });
      assert.equal(expectStatus(r, 'success', s).stdout, '4\n');
    } finally {
      await s.close();
    }
  });

  test('HTTP', async () => {
    const http = await startHttpServer();
    try {
      const client = await connectModernHttp(http.url, { mode: 'auto' });
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), V);
      const r = await callExec(client, { language: 'python', code: 'print(2 + 2)' });
      assert.equal(expectStatus(r, 'success', http).stdout, '4\n');
      await client.close();
    } finally {
      await http.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// A legacy (SDK v1, initialize, Mcp-Session-Id) client beside modern (SDK v2) clients on one
// HTTP server: two owners that never see each other's sessions or files.

describe('HTTP: a legacy client and a modern client are isolated both ways', () => {
  let http;
  let legacy;
  let modern;
  const LSID = 'sess_isolegacy001';
  const MSID = 'sess_isomodern001';
  const ok = async (c, args) => expectStatus(await callExec(c, { language: 'python', ...args }), 'success', http);

  before(async () => {
    http = await startHttpServer();
    legacy = (await http.connect()).client;
    modern = await connectModernHttp(http.url);
    await ok(legacy, { session_id: LSID, code: "secret = 'legacy-secret'\nopen('/mnt/data/legacy.txt', 'w').write('legacy file')" });
    await ok(modern, { session_id: MSID, code: "secret = 'modern-secret'\nopen('/mnt/data/modern.txt', 'w').write('modern file')" });
  });
  after(async () => {
    await modern?.close().catch(() => {});
    await http?.close();
  });

  test('the modern request carries no Mcp-Session-Id and gets none', async () => {
    const m = modernRequest('tools/list');
    const a = await post(http.url, m, modernHeaders(m));
    expectComplete(m, a, { cacheable: true, httpStatus: 200 });
    assert.equal(a.headers.get('mcp-session-id'), null, 'a modern answer mints no session');
  });

  test("a modern request carrying a legacy client's Mcp-Session-Id is still served as modern (the header is ignored)", async () => {
    const init = { jsonrpc: '2.0', id: rawId++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-legacy', version: '0' } } };
    const ia = await post(http.url, init, { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25' });
    const legacySession = ia.headers.get('mcp-session-id');
    assert.ok(legacySession, describeExchange(init, ia));
    const m = modernRequest('tools/call', { name: 'list_sessions', arguments: {} });
    const a = await post(http.url, m, { ...modernHeaders(m), 'Mcp-Session-Id': legacySession });
    const r = expectComplete(m, a, { httpStatus: 200 });
    assert.equal(a.headers.get('mcp-session-id'), null, describeExchange(m, a));
    const ids = r.structuredContent.sessions.map((x) => x.session_id);
    assert.ok(ids.includes(MSID) && !ids.includes(LSID), `served as the anonymous modern owner: ${describeExchange(m, a)}`);
  });

  test('list_sessions: each sees only its own', async () => {
    const mine = sc(await modern.callTool({ name: 'list_sessions', arguments: {} }, CALL)).sessions.map((s) => s.session_id);
    assert.ok(mine.includes(MSID) && !mine.includes(LSID), `modern sees ${JSON.stringify(mine)}`);
    const theirs = sc(await legacy.callTool({ name: 'list_sessions', arguments: {} }, undefined, CALL)).sessions.map((s) => s.session_id);
    assert.ok(theirs.includes(LSID) && !theirs.includes(MSID), `legacy sees ${JSON.stringify(theirs)}`);
  });

  test("resources: each lists only its own files and cannot read the other's", async () => {
    const mUris = (await modern.listResources(undefined, { cacheMode: 'bypass' })).resources.map((r) => r.uri);
    assert.ok(mUris.includes(uriOf(MSID, 'modern.txt')), JSON.stringify(mUris));
    assert.ok(!mUris.includes(uriOf(LSID, 'legacy.txt')), `modern lists the legacy file: ${JSON.stringify(mUris)}`);
    const lUris = (await legacy.listResources()).resources.map((r) => r.uri);
    assert.ok(lUris.includes(uriOf(LSID, 'legacy.txt')), JSON.stringify(lUris));
    assert.ok(!lUris.includes(uriOf(MSID, 'modern.txt')), `legacy lists the modern file: ${JSON.stringify(lUris)}`);

    assert.equal((await modern.readResource({ uri: uriOf(MSID, 'modern.txt') }, { cacheMode: 'bypass' })).contents[0].text, 'modern file');
    await assert.rejects(modern.readResource({ uri: uriOf(LSID, 'legacy.txt') }, { cacheMode: 'bypass' }), (err) => {
      assert.ok([-32602, -32002].includes(err.code), `${err.code} ${err.message}`);
      assert.ok(!/legacy file/.test(err.message));
      return true;
    });
    await assert.rejects(legacy.readResource({ uri: uriOf(MSID, 'modern.txt') }), (err) => {
      assert.ok([-32602, -32002].includes(err.code), `${err.code} ${err.message}`);
      return true;
    });
  });

  test("execute_code with the other's session_id makes a session of its own", async () => {
    let r = await callExec(modern, { language: 'python', session_id: LSID, code: 'print(secret)' });
    let s = expectStatus(r, 'execution_error', http);
    assert.ok(s.stderr.includes('NameError') && !s.stdout.includes('legacy-secret'), show(r, http));
    r = await callExec(legacy, { language: 'python', session_id: MSID, code: 'print(secret)' });
    s = expectStatus(r, 'execution_error', http);
    assert.ok(s.stderr.includes('NameError') && !s.stdout.includes('modern-secret'), show(r, http));
    // the owners' own sessions are untouched
    assert.equal((await ok(legacy, { session_id: LSID, code: 'print(secret)' })).stdout, 'legacy-secret\n');
    assert.equal((await ok(modern, { session_id: MSID, code: 'print(secret)' })).stdout, 'modern-secret\n');
  });

  test('two anonymous modern clients are one owner (no session, no token)', async () => {
    const other = await connectModernHttp(http.url, { name: 'second-modern' });
    try {
      assert.equal((await ok(other, { session_id: MSID, code: 'print(secret)' })).stdout, 'modern-secret\n');
      const ids = sc(await other.callTool({ name: 'list_sessions', arguments: {} }, CALL)).sessions.map((s) => s.session_id);
      assert.ok(ids.includes(MSID), JSON.stringify(ids));
      // the modern owner's own LSID (made by the test above) may be listed, but it is not the legacy client's
      const r = await callExec(other, { language: 'python', session_id: LSID, code: "print(globals().get('secret'))" });
      assert.equal(expectStatus(r, 'success', http).stdout, 'None\n', show(r, http));
    } finally {
      await other.close().catch(() => {});
    }
  });
});

describe('HTTP with --http-token: modern requests need the bearer token; one token is one owner', () => {
  const token = 'modern-e2e-token-0123456789abcdef';
  const token2 = 'modern-e2e-token-second-fedcba98';
  let http;
  before(async () => {
    http = await startHttpServer({ args: ['--http-token', `${token},${token2}`] });
  });
  after(async () => {
    await http?.close();
  });

  test('without the token: 401; with it: served, and a second client with it shares the sessions', async () => {
    const m = modernRequest('server/discover');
    const a = await post(http.url, m, modernHeaders(m));
    assert.equal(a.status, 401, describeExchange(m, a));
    const auth = { Authorization: `Bearer ${token}` };
    const one = await connectModernHttp(http.url, { headers: auth });
    const two = await connectModernHttp(http.url, { headers: auth, name: 'second' });
    try {
      const sid = 'sess_modtoken0001';
      expectStatus(await callExec(one, { language: 'python', session_id: sid, code: 'k = 7' }), 'success', http);
      const r = await callExec(two, { language: 'python', session_id: sid, code: 'print(k * 6)' });
      assert.equal(expectStatus(r, 'success', http).stdout, '42\n', show(r, http));
    } finally {
      await one.close().catch(() => {});
      await two.close().catch(() => {});
    }
  });

  test('another token of the list is another owner: it sees neither the sessions nor the files', async () => {
    const a = await connectModernHttp(http.url, { headers: { Authorization: `Bearer ${token}` } });
    const b = await connectModernHttp(http.url, { headers: { Authorization: `Bearer ${token2}` }, name: 'other-token' });
    try {
      const sid = 'sess_modtokenown1';
      expectStatus(await callExec(a, { language: 'python', session_id: sid, code: "t = 'token-one'\nopen('/mnt/data/t1.txt', 'w').write('t1')" }), 'success', http);
      let r = await callExec(b, { language: 'python', session_id: sid, code: 'print(t)' });
      assert.ok(expectStatus(r, 'execution_error', http).stderr.includes('NameError'), show(r, http));
      const ids = sc(await b.callTool({ name: 'list_sessions', arguments: {} }, CALL)).sessions.map((s) => s.session_id);
      assert.ok(!ids.includes(sid) || (await callExec(b, { language: 'python', session_id: sid, code: "print(globals().get('t'))" })).structuredContent.stdout === 'None\n',
        `token two lists token one's session: ${JSON.stringify(ids)}`);
      const uris = (await b.listResources(undefined, { cacheMode: 'bypass' })).resources.map((x) => x.uri);
      assert.ok(!uris.includes(uriOf(sid, 't1.txt')), JSON.stringify(uris));
      await assert.rejects(b.readResource({ uri: uriOf(sid, 't1.txt') }, { cacheMode: 'bypass' }), (err) => err.code === -32602);
      r = await callExec(a, { language: 'python', session_id: sid, code: 'print(t)' });
      assert.equal(expectStatus(r, 'success', http).stdout, 'token-one\n', show(r, http));
    } finally {
      await a.close().catch(() => {});
      await b.close().catch(() => {});
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Raw protocol: what the SDK would never send wrong, and the exact shape of every answer.
// `ask(message, headers?)` returns { msg, status? }; over stdio status is undefined.

function rawChecks(label, setup) {
  describe(`${label}: raw modern requests`, () => {
    let ctx;
    const isHttp = label === 'HTTP';
    const st = (code) => (isHttp ? code : undefined);
    before(async () => {
      ctx = await setup();
    });
    after(async () => {
      await ctx?.close();
    });

    test('server/discover without initialize', async () => {
      const m = modernRequest('server/discover');
      const a = await ctx.ask(m);
      const r = expectComplete(m, a, { cacheable: true, httpStatus: st(200) });
      for (const v of [V, '2025-11-25']) assert.ok(r.supportedVersions?.includes(v), `supportedVersions lacks ${v}\n${describeExchange(m, a)}`);
      assert.ok(r.capabilities?.tools && r.capabilities?.resources, describeExchange(m, a));
      assert.equal(r.capabilities.tasks, undefined, "2025-11-25's tasks capability is not a 2026 one (tasks are an extension)");
      assert.equal(r._meta?.[K.serverInfo]?.name, 'cellgate', describeExchange(m, a));
      if (isHttp) assert.equal(a.headers.get('mcp-session-id'), null, 'no session minted');
    });

    test('lists and reads: resultType, ttlMs, cacheScope', async () => {
      for (const method of ['tools/list', 'resources/list', 'resources/templates/list']) {
        const m = modernRequest(method);
        const r = expectComplete(m, await ctx.ask(m), { cacheable: true, httpStatus: st(200) });
        if (method === 'tools/list') assert.ok(r.tools.some((t) => t.name === 'execute_code'));
      }
      const sid = `sess_raw${isHttp ? 'ht' : 'st'}file001`;
      const call = modernRequest('tools/call', {
        name: 'execute_code',
        arguments: { language: 'python', session_id: sid, code: "open('/mnt/data/r.txt', 'w').write('raw')\nprint('ok')" },
      });
      const cr = expectComplete(call, await ctx.ask(call), { httpStatus: st(200) });
      assert.equal(cr.structuredContent?.status, 'success', JSON.stringify(cr));
      const read = modernRequest('resources/read', { uri: uriOf(sid, 'r.txt') });
      const rr = expectComplete(read, await ctx.ask(read), { cacheable: true, httpStatus: st(200) });
      assert.equal(rr.contents?.[0]?.text, 'raw', JSON.stringify(rr));
      const list = modernRequest('resources/list');
      const lr = expectComplete(list, await ctx.ask(list), { cacheable: true });
      assert.ok(lr.resources.some((x) => x.uri === uriOf(sid, 'r.txt')), JSON.stringify(lr));
    });

    test('every other result has resultType "complete": tool errors, other tools, a task param ignored', async () => {
      const cases = [
        ['tools/call', { name: 'execute_code', arguments: { language: 'python', code: '1/0' } }, (r) => r.isError === true && r.structuredContent.status === 'execution_error'],
        ['tools/call', { name: 'execute_code', arguments: { language: 'cobol', code: 'x' } }, (r) => r.isError === true],
        ['tools/call', { name: 'list_sessions', arguments: {} }, (r) => Array.isArray(r.structuredContent?.sessions)],
        // input() without stdin: an error result at once, no elicitation/create request on the wire
        ['tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'input()', timeout: 60 } },
          (r) => r.isError === true && r.structuredContent.status === 'execution_error' && r.structuredContent.timed_out === false],
        // 2025-11-25's params.task is ignored on a 2026-07-28 request: the answer is plain
        ['tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'print(3)' }, task: { ttl: 60000 } },
          (r) => r.structuredContent?.stdout === '3\n' && r.task === undefined && r.taskId === undefined],
      ];
      for (const [method, params, check] of cases) {
        const m = modernRequest(method, params);
        const a = await ctx.ask(m);
        const r = expectComplete(m, a, { httpStatus: st(200) });
        assert.ok(check(r), describeExchange(m, a));
      }
      // a request declaring the tasks extension, with a short timeout, is answered when done (no task)
      const m = modernRequest('tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'print(4)' } },
        meta({ [K.caps]: { extensions: { [TASKS_EXT]: {} } } }));
      const a = await ctx.ask(m);
      assert.equal(expectComplete(m, a, { httpStatus: st(200) }).structuredContent?.stdout, '4\n', describeExchange(m, a));
    });

    test('an unknown tool and an unknown resource stay in-band errors (HTTP 200)', async () => {
      const m = modernRequest('tools/call', { name: 'no_such_tool_modern', arguments: {} });
      const a = await ctx.ask(m);
      if (a.msg?.error) expectError(m, a, -32602, st(200));
      else assert.equal(expectComplete(m, a, { httpStatus: st(200) }).isError, true, describeExchange(m, a));
      const r = modernRequest('resources/read', { uri: uriOf('sess_nosuchone01', 'x.txt') });
      expectError(r, await ctx.ask(r), -32602, st(200));
    });

    test('_meta without clientCapabilities: -32602 (HTTP 400)', async () => {
      const { [K.caps]: _, ...noCaps } = meta();
      for (const method of ['server/discover', 'tools/list']) {
        const m = modernRequest(method, {}, noCaps);
        expectError(m, await ctx.ask(m), -32602, st(400));
      }
      const call = modernRequest('tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'print(1)' } }, noCaps);
      expectError(call, await ctx.ask(call), -32602, st(400));
    });

    test('protocolVersion not a string: -32602 (HTTP 400)', async () => {
      const m = modernRequest('tools/list', {}, meta({ [K.version]: 20260728 }));
      expectError(m, await ctx.ask(m, { ...modernHeaders(m), 'MCP-Protocol-Version': '20260728' }), -32602, st(400));
    });

    test('a logLevel that is not an MCP level: -32602 (HTTP 400); a valid one is served', async () => {
      const bad = modernRequest('tools/list', {}, meta({ 'io.modelcontextprotocol/logLevel': 'verbose' }));
      expectError(bad, await ctx.ask(bad), -32602, st(400));
      const good = modernRequest('tools/list', {}, meta({ 'io.modelcontextprotocol/logLevel': 'debug' }));
      expectComplete(good, await ctx.ask(good), { cacheable: true, httpStatus: st(200) });
    });

    test('an unsupported version: -32022 with data.supported and data.requested (HTTP 400)', async () => {
      for (const method of ['server/discover', 'tools/list']) {
        const m = modernRequest(method, {}, meta({ [K.version]: '1900-01-01' }));
        const a = await ctx.ask(m);
        const e = expectError(m, a, -32022, st(400));
        assert.ok(Array.isArray(e.data?.supported) && e.data.supported.includes(V), describeExchange(m, a));
        assert.ok(e.data.supported.every((v) => typeof v === 'string'), describeExchange(m, a));
        assert.equal(e.data.requested, '1900-01-01', describeExchange(m, a));
      }
    });

    test('legacy methods with modern _meta, and unknown methods: -32601 (HTTP 404)', async () => {
      const cases = [
        ['initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } }],
        ['ping', {}],
        ['logging/setLevel', { level: 'info' }],
        ['resources/subscribe', { uri: uriOf('sess_rawsub00001', 'a.txt') }],
        ['resources/unsubscribe', { uri: uriOf('sess_rawsub00001', 'a.txt') }],
        ['tasks/list', {}],
        ['unknown/method', {}],
      ];
      for (const [method, params] of cases) {
        const m = modernRequest(method, params);
        const a = await ctx.ask(m);
        expectError(m, a, -32601, st(404));
        if (isHttp) assert.equal(a.headers.get('mcp-session-id'), null, `${method}: no session minted`);
      }
      // the server still answers modern requests afterwards
      const d = modernRequest('server/discover');
      expectComplete(d, await ctx.ask(d));
    });

    if (!isHttp) {
      test('stdio: a legacy initialize (no _meta) still works on a process that served modern requests', async () => {
        const init = { jsonrpc: '2.0', id: rawId++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy-raw', version: '0' } } };
        const a = await ctx.ask(init);
        assert.equal(a.msg.result?.protocolVersion, '2025-11-25', describeExchange(init, a));
        ctx.raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const ping = { jsonrpc: '2.0', id: rawId++, method: 'ping' };
        const p = await ctx.ask(ping);
        assert.ok(p.msg.result, describeExchange(ping, p));
      });

      test('stdio: after a legacy initialize, a modern request is still served statelessly (dual-era MAY)', async () => {
        const m = modernRequest('tools/call', { name: 'execute_code', arguments: { language: 'python', code: 'print(5)' } });
        const a = await ctx.ask(m);
        assert.equal(expectComplete(m, a).structuredContent?.stdout, '5\n', describeExchange(m, a));
      });
    }

    if (isHttp) {
      test('HTTP header checks: Mcp-Method, Mcp-Name, MCP-Protocol-Version missing or different: 400/-32020', async () => {
        const call = () => modernRequest('tools/call', { name: 'execute_code', arguments: { language: 'python', code: "print('must not run')" } });
        const read = () => modernRequest('resources/read', { uri: uriOf('sess_rawhtfile001', 'r.txt') });
        const list = () => modernRequest('tools/list');
        const without = (h, name) => Object.fromEntries(Object.entries(h).filter(([k]) => k.toLowerCase() !== name.toLowerCase()));
        const cases = [
          ['Mcp-Method missing', list, (h) => without(h, 'Mcp-Method')],
          ['Mcp-Method different', list, (h) => ({ ...h, 'Mcp-Method': 'resources/list' })],
          ['Mcp-Method different (tools/call)', call, (h) => ({ ...h, 'Mcp-Method': 'tools/list' })],
          ['Mcp-Name missing (tools/call)', call, (h) => without(h, 'Mcp-Name')],
          ['Mcp-Name different (tools/call)', call, (h) => ({ ...h, 'Mcp-Name': 'list_sessions' })],
          ['Mcp-Name missing (resources/read)', read, (h) => without(h, 'Mcp-Name')],
          ['Mcp-Name different (resources/read)', read, (h) => ({ ...h, 'Mcp-Name': uriOf('sess_rawhtfile001', 'other.txt') })],
          ['MCP-Protocol-Version missing', list, (h) => without(h, 'MCP-Protocol-Version')],
          ['MCP-Protocol-Version different', list, (h) => ({ ...h, 'MCP-Protocol-Version': '2025-11-25' })],
          ['MCP-Protocol-Version different (tools/call)', call, (h) => ({ ...h, 'MCP-Protocol-Version': '2025-06-18' })],
        ];
        for (const [what, make, edit] of cases) {
          const m = make();
          const a = await ctx.ask(m, edit(modernHeaders(m)));
          const e = expectError(m, a, -32020, 400);
          assert.equal(typeof e.message, 'string', what);
          assert.ok(!a.text.includes('must not run'), `${what}: the code must not have run`);
        }
        // header values are case-sensitive
        for (const [what, make, edit] of [
          ['Mcp-Method in upper case', list, (h) => ({ ...h, 'Mcp-Method': 'TOOLS/LIST' })],
          ['Mcp-Name in another case', call, (h) => ({ ...h, 'Mcp-Name': 'Execute_Code' })],
          ['Mcp-Name not valid base64', call, (h) => ({ ...h, 'Mcp-Name': '=?base64?!!!not base64!!!?=' })],
          ['Mcp-Name base64 of another name', call, (h) => ({ ...h, 'Mcp-Name': `=?base64?${Buffer.from('list_sessions').toString('base64')}?=` })],
        ]) {
          const m = make();
          const a = await ctx.ask(m, edit(modernHeaders(m)));
          expectError(m, a, -32020, 400);
          assert.ok(!a.text.includes('must not run'), `${what}: the code must not have run`);
        }
        // a =?base64?...?= Mcp-Name is decoded before the comparison
        {
          const m = modernRequest('tools/call', { name: 'list_sessions', arguments: {} });
          const h = { ...modernHeaders(m), 'Mcp-Name': `=?base64?${Buffer.from('list_sessions').toString('base64')}?=` };
          expectComplete(m, await ctx.ask(m, h), { httpStatus: 200 });
          const u = uriOf('sess_rawhtfile001', 'r.txt');
          const rm = modernRequest('resources/read', { uri: u });
          const rh = { ...modernHeaders(rm), 'Mcp-Name': `=?base64?${Buffer.from(u).toString('base64')}?=` };
          assert.equal(expectComplete(rm, await ctx.ask(rm, rh), { cacheable: true, httpStatus: 200 }).contents[0].text, 'raw');
        }
        // header names are case-insensitive: lower-case headers are fine
        const m = list();
        const lower = Object.fromEntries(Object.entries(modernHeaders(m)).map(([k, v]) => [k.toLowerCase(), v]));
        expectComplete(m, await ctx.ask(m, lower), { cacheable: true, httpStatus: 200 });
      });
    }
  });
}

rawChecks('stdio', async () => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-modern-raw-'));
  const raw = startRawServer(stateDir);
  return {
    raw,
    ask: (m) => askStdio(raw, m),
    close: async () => {
      await stopRaw(raw);
      removeStateDir(stateDir);
    },
  };
});

rawChecks('HTTP', async () => {
  const http = await startHttpServer();
  return {
    http,
    ask: async (m, headers) => {
      const a = await post(http.url, m, headers ?? modernHeaders(m));
      if (a.serverRequests.length) throw new Error(`the server sent a request on a modern exchange (forbidden): ${JSON.stringify(a.serverRequests)}`);
      return a;
    },
    close: () => http.close(),
  };
});
