// The main loop never waits on heavy work (issue 29, point 2): the execution log's searches
// and reads run on the log's reader thread, at most CG_TOOLS_LOG_JOBS_MAX (16) at once,
// beyond that a clear server_busy, beside its writer, once the writes queued before them are
// done; a run's answer waits for its line (issue 30: an answered run is in the log), never
// for a search; uploads are decoded
// and written off the loop; a large Streamable HTTP body is parsed off the loop. Work is
// held in flight with --test-hold-at POINT:PATH (released by creating PATH), or its order
// checked against a ping sent right after it, so nothing here is timed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { openChannels } from './gateway_ws_raw.mjs';
import { sleep, startHttpServer, startRawServer, startServer } from './lib.mjs';

const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

// Starts a server whose first log search or read waits until release() is called;
// held() returns once a search has reached the hold (the server says so in its log).
async function heldServer(tag) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cg-e2e-loop-${tag}-`));
  const release = path.join(dir, 'release');
  const server = await startServer({
    name: `loop-${tag}`,
    args: ['--log-dir', path.join(dir, 'logs'), '--test-hold-at', `log_read:${release}`],
  });
  const held = async () => {
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at log_read'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at log_read until/, 'the search reached the hold');
  };
  return { server, release: () => fs.writeFileSync(release, ''), held, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

test('a ping and other calls, a run among them, are answered while a log search is in flight; the search then finds the run answered before it', async () => {
  const { server, release, held, cleanup } = await heldServer('ping');
  const c = server.client;
  try {
    const run = (await call(c, 'execute_code', { language: 'bash', code: 'echo loop-marker-1' })).structuredContent;
    assert.equal(run.status, 'success', JSON.stringify(run));
    let settled = false;
    const search = call(c, 'search_execution_logs', { query: 'loop-marker' }).finally(() => { settled = true; });
    await held();
    // The loop is free: pings, tools/list and a run are answered while the search waits.
    for (let i = 0; i < 5; i++) assert.deepEqual(await c.ping({ timeout: 30000 }), {});
    assert.ok((await c.listTools()).tools.length > 0);
    const other = (await call(c, 'execute_code', { language: 'bash', code: 'echo loop-marker-2' })).structuredContent;
    assert.equal(other.stdout, 'loop-marker-2\n');
    assert.equal(settled, false, 'the search is still held');
    release();
    const found = (await search).structuredContent;
    // The search waited for the writes queued before it (the first run's line and row);
    // the second run's row may or may not be in by the time it runs.
    const ids = found.results.map((r) => r.execution_id);
    assert.ok(ids.includes(run.execution_id) && ids.every((id) => id === run.execution_id || id === other.execution_id), JSON.stringify(found));
    const again = (await call(c, 'search_execution_logs', { query: 'loop-marker' })).structuredContent;
    assert.equal(again.total_count, 2);
    const entry = (await call(c, 'get_execution_log', { execution_id: other.execution_id })).structuredContent;
    assert.equal(entry.stdout, 'loop-marker-2\n');
  } finally {
    release();
    await server.close();
    cleanup();
  }
});

// Starts a server whose first log write (a run's entry or a session's line) waits until
// release() is called.
async function heldWriteServer(tag) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cg-e2e-loop-${tag}-`));
  const release = path.join(dir, 'release');
  const logs = path.join(dir, 'logs');
  const server = await startServer({ name: `loop-${tag}`, args: ['--log-dir', logs, '--test-hold-at', `log_write:${release}`] });
  const held = async () => {
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at log_write'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at log_write until/, 'the write reached the hold');
  };
  return { server, logs, release: () => fs.writeFileSync(release, ''), held, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

// The execution_ids in the day files of LOGS, read now.
const loggedIds = (logs) => fs.readdirSync(logs).filter((f) => f.startsWith('executions-'))
  .flatMap((f) => fs.readFileSync(path.join(logs, f), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).execution_id));

test('a run is answered only once its log line is written: while the write is held, pings are answered, the run and a search are not; then the search after the answer finds it', async () => {
  const { server, logs, release, held, cleanup } = await heldWriteServer('write');
  const c = server.client;
  try {
    let atAnswer = null;
    const run = call(c, 'execute_code', { language: 'bash', code: 'echo held-write-marker' }).then((r) => {
      atAnswer = loggedIds(logs); // read the moment the answer arrives
      return r;
    });
    await held();
    // A search waits for the writes queued before it; the loop does not.
    let searched = false;
    const early = call(c, 'search_execution_logs', { query: 'held-write-marker' }).finally(() => { searched = true; });
    for (let i = 0; i < 3; i++) assert.deepEqual(await c.ping({ timeout: 30000 }), {});
    assert.ok((await c.listTools()).tools.length > 0);
    assert.equal(atAnswer, null, 'the run was answered before its log line was written');
    assert.equal(searched, false, 'the search did not wait for the write queued before it');
    release();
    const result = (await run).structuredContent;
    assert.equal(result.stdout, 'held-write-marker\n', JSON.stringify(result));
    assert.ok(atAnswer.includes(result.execution_id), `its line was in the log when the answer came: ${JSON.stringify(atAnswer)}`);
    await early;
    const found = (await call(c, 'search_execution_logs', { query: 'held-write-marker' })).structuredContent;
    assert.deepEqual(found.results.map((r) => r.execution_id), [result.execution_id]);
  } finally {
    release();
    await server.close();
    cleanup();
  }
});

test('the log reader holds at most 16 searches; past that a call is answered server_busy at once', async () => {
  const { server, release, held, cleanup } = await heldServer('limit');
  const c = server.client;
  try {
    const first = call(c, 'search_execution_logs', {});
    await held();
    const settled = [];
    const more = Array.from({ length: 20 }, (_, i) =>
      call(c, 'search_execution_logs', { limit: 1 + i }).then((r) => { settled.push(r); return r; }));
    // Answers come in the order the server wrote them: once the ping is answered, so is
    // every call refused before it, while the first search is still held.
    assert.deepEqual(await c.ping({ timeout: 30000 }), {});
    await new Promise((r) => setImmediate(r));
    const busy = settled.filter((r) => r.structuredContent?.error === 'server_busy');
    assert.equal(busy.length, 5, `16 out (1 held + 15 waiting), the other 5 refused: ${JSON.stringify(settled.map((r) => r.structuredContent))}`);
    assert.equal(settled.length, 5, 'only the refused calls are answered');
    assert.equal(busy[0].isError, true);
    assert.match(busy[0].structuredContent.message, /log-search worker has 16 operations waiting, its limit/);
    release();
    const firstResult = (await first).structuredContent;
    assert.equal(firstResult.total_count, 0);
    const answered = await Promise.all(more);
    assert.equal(answered.filter((r) => r.structuredContent.error === 'server_busy').length, 5);
    for (const r of answered.filter((x) => !x.isError)) assert.equal(r.structuredContent.total_count, 0);
    assert.equal(answered.filter((x) => !x.isError).length, 15);
  } finally {
    release();
    await server.close();
    cleanup();
  }
});

test('a ping sent right after a slow log search (a two-letter query over 40 MB of logged output) is answered first', async () => {
  // 2,000 logged runs of 20 KB output each, written as the log's own lines (the index is
  // rebuilt from them at start); a query shorter than three characters scans them all.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-loop-slow-'));
  const day = new Date().toISOString().slice(0, 10);
  const fd = fs.openSync(path.join(dir, `executions-${day}.jsonl`), 'w');
  const output = 'abcdefghij'.repeat(2000);
  for (let i = 0; i < 2000; i++)
    fs.writeSync(fd, `${JSON.stringify({ execution_id: `exec_slow${String(i).padStart(7, '0')}`, client_id: 'stdio', language: 'python', status: 'success', exit_code: 0, duration_ms: 1, executed_at: `${day}T00:00:00Z`, code: `print(${i})`, stdout: output, stderr: '' })}\n`);
  fs.closeSync(fd);
  const server = await startServer({ name: 'loop-slow', args: ['--log-dir', dir], connectTimeoutMs: 120000 });
  try {
    const order = [];
    const search = call(server.client, 'search_execution_logs', { query: 'zq' }).then((r) => { order.push('search'); return r; });
    const ping = server.client.ping({ timeout: 60000 }).then(() => order.push('ping'));
    await Promise.all([search, ping]);
    assert.deepEqual(order, ['ping', 'search'], 'the loop answered the ping while the search ran elsewhere');
    assert.equal((await search).structuredContent.total_count, 0);
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a ping sent right after a 32 MB upload_file is answered first; the file is whole', async () => {
  const server = await startServer({ name: 'loop-upload' });
  try {
    const c = server.client;
    const session_id = (await call(c, 'start_session', { language: 'bash' })).structuredContent.session_id;
    const content = Buffer.alloc(32 << 20, 0x61).toString('base64');
    const order = [];
    const upload = call(c, 'upload_file', { session_id, filename: 'big.txt', content_base64: content }).then((r) => { order.push('upload'); return r; });
    const ping = c.ping({ timeout: 60000 }).then(() => order.push('ping'));
    await Promise.all([upload, ping]);
    assert.deepEqual(order, ['ping', 'upload'], 'the loop answered the ping while the upload was decoded and written elsewhere');
    const up = (await upload).structuredContent;
    assert.equal(up.size_bytes, 32 << 20, JSON.stringify(up));
    const wc = (await call(c, 'execute_code', { language: 'bash', session_id, code: 'wc -c < big.txt; tr -d a < big.txt | wc -c' })).structuredContent;
    assert.equal(wc.stdout, `${32 << 20}\n0\n`);
  } finally {
    await server.close();
  }
});

test('over Streamable HTTP, a large POST body is parsed off the loop: pings are answered while it is held', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-loop-http-'));
  const release = path.join(dir, 'release');
  const server = await startHttpServer({ args: ['--test-hold-at', `request_parse:${release}`] });
  try {
    const { client: a } = await server.connect();
    const { client: b } = await server.connect();
    const session_id = (await a.callTool({ name: 'start_session', arguments: { language: 'bash' } })).structuredContent.session_id;
    let settled = false;
    const upload = a.callTool({ name: 'upload_file', arguments: { session_id, filename: 'one.bin', content_base64: Buffer.alloc(1 << 20, 1).toString('base64') } }, undefined, { timeout: 120000 })
      .finally(() => { settled = true; });
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at request_parse'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at request_parse until/);
    for (let i = 0; i < 5; i++) assert.deepEqual(await b.ping({ timeout: 30000 }), {});
    assert.deepEqual(await a.ping({ timeout: 30000 }), {});
    assert.equal(settled, false, 'the upload is still held');
    fs.writeFileSync(release, '');
    const up = (await upload).structuredContent;
    assert.equal(up.size_bytes, 1 << 20, JSON.stringify(up));
  } finally {
    fs.writeFileSync(release, '');
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('over stdio, a long line is parsed off the loop: the gateway answers while it is held, and the lines after it wait their turn', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-loop-stdio-'));
  const release = path.join(dir, 'release');
  const server = await startServer({ name: 'loop-stdio', args: ['--test-hold-at', `request_parse:${release}`] });
  try {
    const c = server.client;
    const origin = server.stderrText().match(/listening on (http:\/\/[0-9.]+:\d+)/)?.[1];
    assert.ok(origin, 'the listener\'s address is in the log');
    const session_id = (await call(c, 'start_session', { language: 'bash' })).structuredContent.session_id;
    const order = [];
    const upload = call(c, 'upload_file', { session_id, filename: 'one.bin', content_base64: Buffer.alloc(1 << 20, 1).toString('base64') })
      .then((r) => { order.push('upload'); return r; });
    const ping = c.ping({ timeout: 60000 }).then(() => order.push('ping'));
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at request_parse'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at request_parse until/);
    // The loop is free: the gateway (on the same loop) answers (401: no token given).
    const api = await fetch(`${origin}/api`);
    assert.equal(api.status, 401);
    await api.text();
    assert.deepEqual(order, [], 'the upload is held, the ping after it waits');
    fs.writeFileSync(release, '');
    await Promise.all([upload, ping]);
    assert.equal((await upload).structuredContent.size_bytes, 1 << 20);
  } finally {
    fs.writeFileSync(release, '');
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('over stdio, a client that stops reading holds only its own answers: the loop writes what the pipe takes and keeps the rest, the gateway answers meanwhile, and every answer arrives whole and in order once the client reads again', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-loop-slowreader-'));
  const server = startRawServer(state, { args: ['--http-listen', '127.0.0.1:0'] });
  try {
    server.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'slow-reader', version: '0' } } });
    assert.ok((await server.next()).result, 'initialized');
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    let origin;
    for (let i = 0; i < 6000 && !(origin = server.stderr().match(/listening on (http:\/\/[0-9.]+:\d+)/)?.[1]); i++) await sleep(10);
    assert.ok(origin, 'the listener\'s address is in the log');
    // 300 tools/list in one write: the server reads them in one go and answers them in one
    // turn of its loop, far more than a pipe holds (each answer is tens of KB).
    const count = 300;
    server.send(Array.from({ length: count }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: 1 + i, method: 'tools/list' })).join('\n'));
    const first = await server.next();
    assert.equal(first.id, 1);
    // The client stops reading, in the middle of that turn's answers.
    server.proc.stdout.pause();
    // The loop is free: the gateway (on the same loop) answers (401: no token given). On a
    // server that writes to the client and waits, this never comes.
    const api = await fetch(`${origin}/api`, { signal: AbortSignal.timeout(60000) });
    assert.equal(api.status, 401);
    await api.text();
    server.proc.stdout.resume();
    const ids = [first.id];
    for (let i = 1; i < count; i++) {
      const m = await server.next();
      assert.ok(m.result?.tools?.length > 0, JSON.stringify(m).slice(0, 200));
      ids.push(m.id);
    }
    assert.deepEqual(ids, Array.from({ length: count }, (_, i) => 1 + i), 'every answer, whole and in order');
    server.send({ jsonrpc: '2.0', id: 'last', method: 'ping' });
    assert.deepEqual(await server.next(), { jsonrpc: '2.0', id: 'last', result: {} });
  } finally {
    server.proc.stdout.resume();
    const exited = new Promise((resolve) => (server.proc.exitCode !== null ? resolve() : server.proc.on('exit', resolve)));
    server.proc.kill('SIGTERM');
    const kill = setTimeout(() => server.proc.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(kill);
    fs.rmSync(state, { recursive: true, force: true });
  }
});

// Starts a server (stdio, or HTTP with { http: true }) whose first large message to a client
// waits in the encoder until release() is called.
async function heldEncodeServer(tag, { http = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cg-e2e-loop-${tag}-`));
  const release = path.join(dir, 'release');
  const args = ['--test-hold-at', `encode:${release}`];
  const server = http ? await startHttpServer({ args }) : await startServer({ name: `loop-${tag}`, args });
  const held = async () => {
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at encode'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at encode until/, 'the large answer reached the encoder');
  };
  return { server, release: () => fs.writeFileSync(release, ''), held, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

// 60 KB of output (within a run's output cap): an answer of over 120 KB (stdout in the
// text and in structuredContent), within the result budget.
const BIG_CELL = 'head -c 60000 /dev/zero | tr "\\0" y';

test('over stdio, a large answer is encoded off the loop: the gateway answers while it is held, and a ping sent after it waits its turn', async () => {
  const { server, release, held, cleanup } = await heldEncodeServer('encode-stdio');
  try {
    const c = server.client;
    const origin = server.stderrText().match(/listening on (http:\/\/[0-9.]+:\d+)/)?.[1];
    assert.ok(origin, 'the listener\'s address is in the log');
    const order = [];
    const run = call(c, 'execute_code', { language: 'bash', code: BIG_CELL }).then((r) => { order.push('run'); return r; });
    await held();
    const ping = c.ping({ timeout: 60000 }).then(() => order.push('ping'));
    const api = await fetch(`${origin}/api`);
    assert.equal(api.status, 401, 'the loop is free: the gateway answers');
    await api.text();
    await sleep(200);
    assert.deepEqual(order, [], 'the run\'s answer is held, the ping after it waits');
    release();
    await Promise.all([run, ping]);
    assert.deepEqual(order, ['run', 'ping'], 'the channel\'s messages kept their order');
    const result = (await run).structuredContent;
    assert.ok(result.stdout === 'y'.repeat(60000), `the answer is whole (${result.stdout?.length} bytes)`);
  } finally {
    release();
    await server.close();
    cleanup();
  }
});

test('over Streamable HTTP, a large answer held in the encoder holds no one else: another client\'s pings are answered, and a DELETE of its session meanwhile harms nothing', async () => {
  const { server, release, held, cleanup } = await heldEncodeServer('encode-http', { http: true });
  try {
    const { client: a, transport: ta } = await server.connect();
    const { client: b } = await server.connect();
    let settled = false;
    const run = call(a, 'execute_code', { language: 'bash', code: BIG_CELL }).finally(() => { settled = true; });
    await held();
    for (let i = 0; i < 5; i++) assert.deepEqual(await b.ping({ timeout: 30000 }), {});
    assert.equal(settled, false, 'the large answer is still held');
    // The client's MCP session ends while its answer is being encoded: the answer still goes
    // out on its own POST's response, which names the session it was asked in.
    await ta.terminateSession();
    release();
    const result = (await run).structuredContent;
    assert.ok(result.stdout === 'y'.repeat(60000), `the answer is whole (${result.stdout?.length} bytes)`);
    assert.deepEqual(await b.ping({ timeout: 30000 }), {});
    assert.equal(server.proc.exitCode, null, 'the server is up');
  } finally {
    release();
    await server.close();
    cleanup();
  }
});

test('a ping sent right after a resources/read of an 8 MB file is answered first; the contents are whole', async () => {
  const server = await startServer({ name: 'loop-resource' });
  try {
    const c = server.client;
    const session_id = (await call(c, 'start_session', { language: 'bash' })).structuredContent.session_id;
    const made = (await call(c, 'execute_code', { language: 'bash', session_id, code: 'head -c 8000000 /dev/zero | tr "\\0" r > big.txt; echo made' })).structuredContent;
    assert.equal(made.stdout, 'made\n', JSON.stringify(made));
    const uri = `cellgate://sessions/${session_id}/files/big.txt`;
    const order = [];
    const read = c.readResource({ uri }, { timeout: 120000 }).then((r) => { order.push('read'); return r; });
    const ping = c.ping({ timeout: 60000 }).then(() => order.push('ping'));
    await Promise.all([read, ping]);
    assert.deepEqual(order, ['ping', 'read'], 'the loop answered the ping while the file was read and encoded elsewhere');
    const text = (await read).contents[0].text;
    assert.ok(text.length === 8000000 && !/[^r]/.test(text), `the contents are whole (${text.length} bytes)`);
  } finally {
    await server.close();
  }
});

test('a large kernel message to a notebook is checked and parsed off the loop: while it is held, pings and the gateway answer, and the cell\'s idle status waits behind it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-loop-gwdecode-'));
  const release = path.join(dir, 'release');
  const token = 'gwdecode-token-0123456789abcdef';
  const server = await startHttpServer({ args: ['--gateway-token', token, '--test-hold-at', `gateway_decode:${release}`] });
  let ws;
  try {
    const { client: c } = await server.connect();
    const kernelId = (await call(c, 'start_session', { language: 'python' })).structuredContent.kernel_id;
    assert.ok(kernelId, 'the session is a kernel');
    ws = await openChannels(server.port, token, kernelId);
    const id = ws.execute("print('g' * 200000)");
    for (let i = 0; i < 6000 && !server.stderrText().includes('held at gateway_decode'); i++) await sleep(10);
    assert.match(server.stderrText(), /held at gateway_decode until/, 'the 200 KB stream message reached the decoder');
    for (let i = 0; i < 5; i++) assert.deepEqual(await c.ping({ timeout: 30000 }), {});
    const api = await fetch(`${server.origin}/api`, { headers: { Authorization: `token ${token}` } });
    assert.equal(api.status, 200, 'the gateway answers');
    await api.text();
    const mine = () => ws.messages.filter((m) => m.parent_header?.msg_id === id);
    const isIdle = (m) => m.parent_header?.msg_id === id && m.msg_type === 'status' && m.content.execution_state === 'idle';
    assert.equal(mine().filter(isIdle).length, 0, 'the idle status after the held message waits for it');
    fs.writeFileSync(release, '');
    await ws.waitFor(isIdle);
    const types = mine().map((m) => m.msg_type);
    const stream = mine().find((m) => m.msg_type === 'stream');
    assert.ok(stream && stream.content.text === `${'g'.repeat(200000)}\n`, `the output is whole: ${stream?.content.text.length}`);
    assert.ok(types.indexOf('stream') < types.lastIndexOf('status'), `in order: ${types}`);
  } finally {
    fs.writeFileSync(release, '');
    ws?.end();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
