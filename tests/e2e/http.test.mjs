// MCP over Streamable HTTP: the official SDK's StreamableHTTPClientTransport driving the
// same scenarios as stdio, a plain curl client the way n8n calls a server, live progress,
// cancellation, dropped connections, per-client sessions and the transport's checks.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { expectStatus, sleep, startHttpServer } from './lib.mjs';

const run = promisify(execFile);

let server;
let a; // { client, transport }

before(async () => {
  server = await startHttpServer({ args: ['--interrupt-grace-ms', '1500'] });
  a = await server.connect();
});

after(async () => {
  await server?.close();
});

const call = (client, name, args, options = {}) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
const ok = (r) => {
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  return r.structuredContent;
};

// One raw HTTP request to the server (or the one on PORT); returns { status, headers, body }.
function raw(method, path, { headers = {}, body, port = server.port } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const JSON_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

test('the SDK client over HTTP: session id, tools, code in every language, files and downloads', async () => {
  assert.match(a.transport.sessionId, /^[0-9a-f]{32}$/);
  const { tools } = await a.client.listTools();
  for (const name of ['execute_code', 'run_python', 'upload_file', 'read_artifact', 'list_artifacts', 'close_session'])
    assert.ok(tools.some((t) => t.name === name), name);

  assert.equal(ok(await call(a.client, 'execute_code', { language: 'python', code: 'x = 6 * 7\nprint(x)', session_id: 'web1' })).stdout, '42\n');
  assert.equal(ok(await call(a.client, 'execute_code', { language: 'python', code: 'print(x + 1)', session_id: 'web1' })).stdout, '43\n');
  assert.equal(ok(await call(a.client, 'execute_code', { language: 'bash', code: 'echo from bash', session_id: 'web1' })).stdout, 'from bash\n');
  assert.equal(ok(await call(a.client, 'execute_code', { language: 'javascript', code: '[3, 1, 2].sort()', session_id: 'web1' })).returnValue.join(), '1,2,3');

  const up = ok(await call(a.client, 'upload_file', { session_id: 'web1', filename: 'in.csv', content_base64: Buffer.from('a,b\n1,2\n').toString('base64') }));
  assert.ok(up.download_url.startsWith(`${server.origin}/files/web1/in.csv?token=`), 'downloads on the same listener');
  const r = ok(await call(a.client, 'run_python', { session_id: 'web1', code: "import pandas as pd\npd.read_csv('/mnt/data/in.csv').to_csv('/mnt/data/out.csv')" }));
  const out = r.artifacts.find((x) => x.filename === 'out.csv');
  assert.equal((await fetch(out.download_url)).status, 200);
  const read = ok(await call(a.client, 'read_artifact', { session_id: 'web1', path: 'out.csv' }));
  assert.match(Buffer.from(read.content_base64, 'base64').toString(), /a,b/);
  assert.equal(ok(await call(a.client, 'close_session', { session_id: 'web1' })).status, 'closed');
});

test('live output: progress notifications arrive in order while the cell runs, before the result', async () => {
  const seen = [];
  let resultAt = null;
  const started = Date.now();
  const pending = call(a.client, 'execute_code', {
    language: 'python',
    session_id: 'web-progress',
    code: 'import time\nfor i in range(5):\n    print(f"step {i}", flush=True)\n    time.sleep(0.6)',
  }, { onprogress: (p) => seen.push({ ...p, at: Date.now() - started }) }).then((res) => { resultAt = Date.now() - started; return res; });
  const res = await pending;
  assert.equal(ok(res).stdout, 'step 0\nstep 1\nstep 2\nstep 3\nstep 4\n');
  const steps = seen.map((p) => p.message.trim());
  assert.deepEqual(steps, ['step 0', 'step 1', 'step 2', 'step 3', 'step 4'], JSON.stringify(seen));
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress increases');
  assert.ok(seen.every((p) => p.at <= resultAt), 'every note came before the result');
  // The first note came while the cell was still running, not in a burst at the end.
  assert.ok(seen[0].at < seen[4].at, JSON.stringify(seen));
  await call(a.client, 'close_session', { session_id: 'web-progress' });
});

test('cancellation interrupts the cell; the session and its state survive', async () => {
  const sid = 'web-cancel';
  ok(await call(a.client, 'execute_code', { language: 'python', code: 'kept = "state"', session_id: sid }));
  const controller = new AbortController();
  const pending = call(a.client, 'execute_code', { language: 'python', code: 'import time\ntime.sleep(30)', session_id: sid }, { signal: controller.signal });
  await sleep(1500);
  controller.abort(new Error('e2e cancel'));
  await assert.rejects(pending);
  let after;
  for (let i = 0; i < 40; i++) {
    after = await call(a.client, 'execute_code', { language: 'python', code: 'print(kept)', session_id: sid });
    if (after.structuredContent.error !== 'session_busy') break;
    await sleep(250);
  }
  assert.equal(ok(after).stdout, 'state\n');
  await call(a.client, 'close_session', { session_id: sid });
});

test('a dropped HTTP connection is not a cancel: the call runs to its end', async () => {
  const sid = 'web-dropped';
  const headers = { ...JSON_HEADERS, 'Mcp-Session-Id': a.transport.sessionId, 'MCP-Protocol-Version': '2025-11-25' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'drop-1', method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', session_id: sid, code: "import time\ntime.sleep(2)\nopen('/mnt/data/finished.txt', 'w').write('yes')" } } });
  const req = http.request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/mcp', headers });
  req.on('error', () => {});
  req.write(body);
  req.end();
  await sleep(700);
  req.destroy(); // the client goes away mid-call
  let listed;
  // Up to a minute: the call starts the session's sandbox and kernel first (slow on a loaded machine).
  for (let i = 0; i < 240; i++) {
    await sleep(250);
    listed = await call(a.client, 'list_artifacts', { session_id: sid });
    if (!listed.isError && listed.structuredContent.artifacts.some((f) => f.filename === 'finished.txt')) break;
  }
  assert.ok(ok(listed).artifacts.some((f) => f.filename === 'finished.txt'), 'the cell finished after the client left');
  await call(a.client, 'close_session', { session_id: sid });
});

test('each MCP client has its own sandboxes; DELETE ends a client and closes them', async () => {
  const b = await server.connect();
  ok(await call(a.client, 'upload_file', { session_id: 'shared-name', filename: 'a.txt', content_base64: Buffer.from('from A').toString('base64') }));
  // B sees nothing of A's session with the same id, and cannot close or read it.
  const bList = await call(b.client, 'list_artifacts', { session_id: 'shared-name' });
  assert.equal(bList.structuredContent.error, 'session_not_found');
  assert.equal((await call(b.client, 'close_session', { session_id: 'shared-name' })).structuredContent.error, 'session_not_found');
  assert.deepEqual(ok(await call(b.client, 'list_sessions', {})).sessions, []);
  // B's own session of that name is a different sandbox.
  ok(await call(b.client, 'upload_file', { session_id: 'shared-name', filename: 'b.txt', content_base64: Buffer.from('from B').toString('base64') }));
  assert.deepEqual(ok(await call(b.client, 'list_artifacts', { session_id: 'shared-name' })).artifacts.map((f) => f.filename), ['b.txt']);
  assert.deepEqual(ok(await call(a.client, 'list_artifacts', { session_id: 'shared-name' })).artifacts.map((f) => f.filename), ['a.txt']);
  // Using A's Mcp-Session-Id is possible only with that id (128 random bits); ending B
  // closes B's sandboxes and leaves A's.
  const bid = b.transport.sessionId;
  await b.transport.terminateSession();
  const gone = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': bid }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
  assert.equal(gone.status, 404);
  assert.deepEqual(ok(await call(a.client, 'list_artifacts', { session_id: 'shared-name' })).artifacts.map((f) => f.filename), ['a.txt']);
  await call(a.client, 'close_session', { session_id: 'shared-name' });
});

test('transport checks: session header, protocol version, Host and Origin, methods, body size', async () => {
  const sid = a.transport.sessionId;
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
  let r = await raw('POST', '/mcp', { headers: JSON_HEADERS, body: ping });
  assert.equal(r.status, 400, 'no Mcp-Session-Id');
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': 'f'.repeat(32) }, body: ping });
  assert.equal(r.status, 404, 'unknown session');
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '1999-01-01' }, body: ping });
  assert.equal(r.status, 400, 'bad protocol version');
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-03-26' }, body: ping });
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body).result, {});
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, Host: 'evil.example.com' }, body: initialize });
  assert.equal(r.status, 403, 'DNS rebinding: foreign Host');
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, Origin: 'http://evil.example.com' }, body: initialize });
  assert.equal(r.status, 403, 'foreign Origin');
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, Origin: server.origin }, body: initialize });
  assert.equal(r.status, 200, 'own Origin');
  assert.match(r.headers['mcp-session-id'], /^[0-9a-f]{32}$/);
  r = await raw('PUT', '/mcp', { headers: { 'Mcp-Session-Id': sid } });
  assert.equal(r.status, 405);
  assert.match(r.headers.allow, /GET, POST/);
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': sid }, body: '{"jsonrpc":' });
  assert.equal(r.status, 400, 'unparsable body');
  assert.equal(JSON.parse(r.body).error.code, -32700);
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
  r = await raw('POST', '/mcp', { headers: { ...JSON_HEADERS, 'Mcp-Session-Id': sid }, body: note });
  assert.equal(r.status, 202, 'a notification gets 202');
  // A body over the limit is refused from its declared length, before it is read.
  r = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/mcp', headers: { ...JSON_HEADERS, 'Mcp-Session-Id': sid, 'Content-Length': String(512 * 1024 * 1024) } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode });
    });
    req.on('error', reject);
    req.write('{');
  });
  assert.equal(r.status, 413);
});

test('bearer token: required when configured, compared exactly, 401 with WWW-Authenticate', async () => {
  const token = 'e2e-token-0123456789abcdef';
  const locked = await startHttpServer({ args: ['--http-token', token] });
  try {
    const post = (headers) => raw('POST', '/mcp', { headers: { ...JSON_HEADERS, ...headers }, body: initialize, port: locked.port });
    let r = await post({});
    assert.equal(r.status, 401);
    assert.match(r.headers['www-authenticate'], /^Bearer/);
    r = await post({ Authorization: `Bearer ${token}x` });
    assert.equal(r.status, 401);
    r = await post({ Authorization: `Bearer ${token}` });
    assert.equal(r.status, 200);
    const { client } = await locked.connect({ headers: { Authorization: `Bearer ${token}` } });
    assert.equal(ok(await call(client, 'execute_code', { language: 'bash', code: 'echo locked' })).stdout, 'locked\n');
  } finally {
    await locked.close();
  }
  // Beyond loopback a token is mandatory: the server refuses to start without one.
  await assert.rejects(startHttpServer({ args: ['--http', '0.0.0.0:0'] }), /--http-token/);
});

test('curl, the way n8n calls an MCP server: initialize, initialized, tools/call', async () => {
  const base = ['-sS', '-X', 'POST', server.url, '-H', 'Content-Type: application/json', '-H', 'Accept: application/json, text/event-stream'];
  const init = await run('curl', [...base, '-D', '-', '--data', initialize]);
  const sid = init.stdout.match(/^mcp-session-id: ([0-9a-f]{32})\r?$/im)?.[1];
  assert.ok(sid, init.stdout);
  const withSession = [...base, '-H', `Mcp-Session-Id: ${sid}`, '-H', 'MCP-Protocol-Version: 2025-11-25'];
  const initialized = await run('curl', [...withSession, '-o', '/dev/null', '-w', '%{http_code}', '--data', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })]);
  assert.equal(initialized.stdout, '202');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code: 'print(sum(range(101)))' } } });
  const res = await run('curl', [...withSession, '--data', body]);
  const message = JSON.parse(res.stdout);
  assert.equal(message.id, 3);
  assert.equal(message.result.structuredContent.stdout, '5050\n');
  assert.equal(message.result.isError, false);
  const del = await run('curl', ['-sS', '-X', 'DELETE', server.url, '-H', `Mcp-Session-Id: ${sid}`, '-o', '/dev/null', '-w', '%{http_code}']);
  assert.equal(del.stdout, '200');
});

test('an HTTP client that goes quiet without DELETE is forgotten after the idle TTL', async () => {
  const brief = await startHttpServer({ args: ['--idle-ttl', '1'] });
  try {
    const post = (headers, body) => raw('POST', '/mcp', { headers: { ...JSON_HEADERS, ...headers }, body, port: brief.port });
    const init = await post({}, initialize);
    const sid = init.headers['mcp-session-id'];
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' });
    assert.equal((await post({ 'Mcp-Session-Id': sid }, ping)).status, 200);
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      await sleep(250);
      status = (await post({ 'Mcp-Session-Id': sid }, ping)).status;
      if (status === 200) await sleep(1500); // keep quiet longer than the TTL
    }
    assert.equal(status, 404);
  } finally {
    await brief.close();
  }
});

test('at most 1024 MCP sessions at once: the next initialize gets 503; --http PORT means loopback', async () => {
  const many = await startHttpServer({ args: ['--http', '0'] });
  try {
    assert.match(many.origin, /^http:\/\/127\.0\.0\.1:\d+$/, 'a bare port listens on 127.0.0.1');
    let last;
    for (let i = 0; i < 1024; i++) {
      last = await raw('POST', '/mcp', { headers: JSON_HEADERS, body: initialize, port: many.port });
      assert.equal(last.status, 200, `initialize ${i}`);
    }
    const refused = await raw('POST', '/mcp', { headers: JSON_HEADERS, body: initialize, port: many.port });
    assert.equal(refused.status, 503);
    // Ending one makes room again.
    const del = await raw('DELETE', '/mcp', { headers: { 'Mcp-Session-Id': last.headers['mcp-session-id'] }, port: many.port });
    assert.equal(del.status, 200);
    assert.equal((await raw('POST', '/mcp', { headers: JSON_HEADERS, body: initialize, port: many.port })).status, 200);
  } finally {
    await many.close();
  }
});
