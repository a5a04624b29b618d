// A new user's first run: `cellgate help` and `cellgate mcp --help` (both transports),
// numbers in errors as people write them, --runtime by path and by a name on PATH, one
// consistent answer per Accept header on POST /mcp, and scripts/run.sh installing what
// serving needs and no test tooling.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, callExec, expectStatus, serverBinary, startHttpServer, startServer, which } from './lib.mjs';

const cellgate = (args, env = {}) =>
  spawnSync(serverBinary(), args, { input: '', encoding: 'utf8', timeout: 20000, env: { ...process.env, ...env } });

test('cellgate help, cellgate help mcp and cellgate mcp --help describe both transports and every option', () => {
  const overview = cellgate(['help']);
  assert.equal(overview.status, 0, overview.stderr);
  assert.match(overview.stdout, /^usage: cellgate <command>/);
  assert.match(overview.stdout, /^ {2}mcp +serve MCP: on stdio \(default\), or on Streamable HTTP with --http$/m);
  assert.match(overview.stdout, /^ {2}help \[TOPIC\]/m);
  for (const args of [['help', 'mcp'], ['mcp', '--help'], ['mcp', '-h']]) {
    const r = cellgate(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    const out = r.stdout;
    assert.match(out, /^usage: cellgate mcp \[options\]/, args.join(' '));
    assert.match(out, /^stdio \(the default\)/m);
    assert.match(out, /^Streamable HTTP \(--http \[HOST:\]PORT\)/m);
    assert.match(out, /claude mcp add --scope user cellgate -- \/path\/to\/cellgate\/build\/cellgate mcp/);
    assert.match(out, /claude mcp add --transport http cellgate http:\/\/127\.0\.0\.1:8765\/mcp/);
    assert.match(out, /n8n's MCP Client node: URL http:\/\/HOST:8765\/mcp/);
    assert.match(out, /curl -sS http:\/\/127\.0\.0\.1:8765\/mcp .*\n.*Accept: application\/json, text\/event-stream/);
    // The options come from the one table, with their variables and defaults.
    for (const [flag, env] of [['--http', 'CELLGATE_HTTP'], ['--runtime', 'CELLGATE_RUNTIME'], ['--memory-mb', 'CELLGATE_MEMORY_MB']])
      assert.match(out, new RegExp(`^ {2}${flag} +${env} `, 'm'), flag);
  }
  const kernel = cellgate(['help', 'kernel']);
  assert.equal(kernel.status, 0);
  assert.match(kernel.stdout, /^usage: cellgate kernel \[options\]/);
  const unknown = cellgate(['help', 'serve']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /cellgate help: unknown command 'serve' \(try cellgate help\)/);
});

test('a bad number is refused with its bounds written in full, from a flag and from a variable', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-first-'));
  try {
    let r = cellgate(['mcp', '--state-dir', dir, '--memory-mb', '2000000']);
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim(), "cellgate: --memory-mb: '2000000' is not a whole number from 32 to 1048576");
    r = cellgate(['mcp', '--state-dir', dir], { CELLGATE_MAX_RESULT_BYTES: '1024' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /CELLGATE_MAX_RESULT_BYTES: '1024' is not a whole number from 65536 to 1073741824$/m);
    assert.doesNotMatch(r.stderr, /e\+/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--runtime runs code by absolute path, by relative path and by a name found only on PATH', async () => {
  const runc = which('runc');
  assert.ok(runc, 'runc is installed by scripts/setup.sh');
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-path-'));
  const link = path.join(bin, 'cg-e2e-runc');
  fs.symlinkSync(runc, link);
  try {
    const relative = path.relative(process.cwd(), runc);
    assert.ok(relative.includes('/') && !path.isAbsolute(relative), relative);
    for (const [spec, shown] of [[runc, runc], [relative, runc], ['cg-e2e-runc', link]]) {
      const server = await startServer({ args: ['--runtime', spec], env: { PATH: `${bin}:${process.env.PATH}` } });
      try {
        const r = await callExec(server.client, { language: 'python', code: 'print(6 * 7)' });
        assert.equal(expectStatus(r, 'success', server).stdout, '42\n', spec);
        assert.ok(server.stderrText().includes(`(${shown})`), `${spec}: the log names ${shown}:\n${server.stderrText()}`);
      } finally {
        await server.close();
      }
    }
    // A name found nowhere, and one found but not executable, are refused saying so.
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-first-'));
    try {
      fs.writeFileSync(path.join(bin, 'cg-e2e-plain'), '#!/bin/sh\n', { mode: 0o644 });
      const env = { PATH: `${bin}:${process.env.PATH}` };
      let r = cellgate(['mcp', '--state-dir', state, '--http-listen', 'off', '--runtime', 'cg-e2e-none'], env);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /OCI runtime 'cg-e2e-none' is not on PATH or in \/usr\/sbin/);
      r = cellgate(['mcp', '--state-dir', state, '--http-listen', 'off', '--runtime', 'cg-e2e-plain'], env);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, new RegExp(`OCI runtime 'cg-e2e-plain': ${bin}/cg-e2e-plain is not an executable file`));
    } finally {
      fs.rmSync(state, { recursive: true, force: true });
    }
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
});

// One raw POST to /mcp with ACCEPT (undefined: no Accept header at all; node's http sends
// none of its own). Returns { status, type, body }.
function post(port, accept, body, sid) {
  const headers = { 'Content-Type': 'application/json', 'MCP-Protocol-Version': '2025-11-25' };
  if (accept !== undefined) headers.Accept = accept;
  if (sid) headers['Mcp-Session-Id'] = sid;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'] ?? '', body: data, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// The JSON-RPC messages of an answer: one JSON body, or an SSE stream's data lines.
function messages(r) {
  if (r.type.startsWith('application/json')) return [JSON.parse(r.body)];
  assert.ok(r.type.startsWith('text/event-stream'), `content type ${r.type}`);
  return r.body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
}

test('POST /mcp answers each Accept consistently: none as application/json alone, SSE only to who takes it', async () => {
  const server = await startHttpServer();
  try {
    const init = await post(server.port, 'application/json, text/event-stream', JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'accept', version: '0' } },
    }));
    assert.equal(init.status, 200);
    const sid = init.headers['mcp-session-id'];
    assert.equal((await post(server.port, undefined, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), sid)).status, 202);

    const both = 'application/json, text/event-stream';
    const variants = [
      [undefined, 'json'],
      ['application/json', 'json'],
      ['application/json;q=1, text/event-stream;q=0', 'json'],
      ['*/*', 'both'],
      [both, 'both'],
      ['text/event-stream', 'sse'],
    ];
    let id = 10;
    const answers = new Map();
    for (const [accept, kind] of variants) {
      const label = accept ?? '(no Accept)';
      // A ping: nothing comes before its response.
      const ping = await post(server.port, accept, JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'ping' }), sid);
      assert.equal(ping.status, 200, `${label}: ${ping.body}`);
      assert.match(ping.type, kind === 'sse' ? /^text\/event-stream/ : /^application\/json/, `${label} ping`);
      assert.deepEqual(messages(ping).map((m) => m.result), [{}], label);
      // A call asking for progress: notifications come before the response.
      const call = await post(server.port, accept, JSON.stringify({
        jsonrpc: '2.0', id: ++id, method: 'tools/call',
        params: { name: 'execute_code', _meta: { progressToken: `p${id}` },
          arguments: { language: 'python', session_id: 'accept', code: 'import time\nprint("a", flush=True)\ntime.sleep(0.3)\nprint("b")' } },
      }), sid);
      assert.equal(call.status, 200, `${label}: ${call.body.slice(0, 500)}`);
      const got = messages(call);
      const result = got.at(-1);
      assert.equal(result.id, id, label);
      assert.equal(result.result.structuredContent.stdout, 'a\nb\n', label);
      const notes = got.filter((m) => m.method === 'notifications/progress');
      if (kind === 'json') {
        assert.match(call.type, /^application\/json/, `${label}: one JSON response`);
        assert.equal(got.length, 1, label);
      } else {
        assert.match(call.type, /^text\/event-stream/, `${label}: a stream`);
        assert.ok(notes.length >= 1, `${label}: progress before the result: ${call.body.slice(0, 500)}`);
      }
      answers.set(label, { ping: ping.type, call: call.type, status: call.status });
    }
    assert.deepEqual(answers.get('(no Accept)'), answers.get('application/json'), 'no Accept is answered as application/json alone');
    for (const accept of ['text/html', 'application/xml, text/plain', 'application/json;q=0']) {
      const r = await post(server.port, accept, JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'ping' }), sid);
      assert.equal(r.status, 406, accept);
      assert.match(JSON.parse(r.body).error.message, /Not Acceptable: accept application\/json, text\/event-stream or both/);
    }
  } finally {
    await server.close();
  }
});

test('scripts/run.sh installs what serving needs and no test tooling; test.sh and .ci/run install it', () => {
  const run = spawnSync(path.join(REPO_ROOT, 'scripts/run.sh'), ['--dry-run'], { encoding: 'utf8', timeout: 30000 });
  assert.equal(run.status, 0, run.stderr);
  const plan = run.stderr;
  assert.match(plan, /^setup \(serve\): Debian packages: .*\brunc\b.*\bpython3-ipykernel\b.*\bnodejs\b/m);
  assert.match(plan, /^setup \(serve\): npm ci in kernels\/javascript: the JavaScript kernel/m);
  for (const testOnly of ['tests/conformance', 'tests/e2e', 'python3-jupyter-kernel-test', 'clang-format', 'libclang-rt', 'left-pad'])
    assert.ok(!plan.includes(testOnly), `run.sh would install ${testOnly}:\n${plan}`);
  const full = spawnSync(path.join(REPO_ROOT, 'scripts/setup.sh'), ['--dry-run', 'test'], { encoding: 'utf8', timeout: 30000 });
  assert.equal(full.status, 0, full.stderr);
  for (const needed of ['npm ci in kernels/javascript', 'npm ci in tests/e2e', 'npm ci in tests/conformance', 'python3-jupyter-kernel-test', 'clang-format', 'left-pad'])
    assert.ok(full.stderr.includes(needed), `setup.sh test lacks ${needed}:\n${full.stderr}`);
  // What test.sh and .ci/run (fresh Debian 12 clone) call first is that full set-up.
  for (const script of ['scripts/test.sh', '.ci/run'])
    assert.match(fs.readFileSync(path.join(REPO_ROOT, script), 'utf8'), /^\.\/scripts\/setup\.sh test$/m, script);
  assert.equal(spawnSync(path.join(REPO_ROOT, 'scripts/setup.sh'), ['--bogus'], { encoding: 'utf8' }).status, 2);
});
