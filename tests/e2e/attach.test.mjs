// The agent's kernel from a stdio server (issue 25): the listener's port policy and where a
// person opens the agent's kernel, told to the agent itself. With 8080 held, a stdio server
// left at the default --http-listen listens on the next free port of 8081-8089 and says so;
// start_session's result carries kernel_id, gateway_url (that listener) and a notebook_command
// naming the gateway token's file (never the token); execute_code's carries kernel_id and
// gateway_url; GET <gateway_url>/api/kernels lists the kernel. A fixed --http-listen on a
// taken port stops the server with a clear message.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, sc, serverBinary, startServer } from './lib.mjs';

// Our socket on 127.0.0.1:8080, or null when another process has it (ctest's RESOURCE_LOCK
// port8080 keeps the tests that take it on purpose apart).
let held = null;
let server;

function hold(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

before(async () => {
  held = await hold(8080);
  // No --http-listen and no CELLGATE_HTTP_LISTEN (lib.mjs sets port 0): the default, 8080.
  server = await startServer({ env: { CELLGATE_HTTP_LISTEN: undefined } });
});

after(async () => {
  await server?.close();
  held?.close();
});

const listenedPort = () => {
  const m = server.stderrText().match(/http: listening on http:\/\/127\.0\.0\.1:(\d+)\//);
  return m ? Number(m[1]) : null;
};

test('with 8080 taken, the default listener moves to 8081-8089 and says so', async () => {
  const port = listenedPort();
  assert.ok(port, `no "listening on" line:\n${server.stderrText()}`);
  assert.ok(port >= 8081 && port <= 8089, `listening on ${port}, not in 8081-8089:\n${server.stderrText()}`);
  assert.match(server.stderrText(), /8081-8089/, 'the log does not say the port policy');
});

test('start_session and execute_code tell the agent where its kernel is', async () => {
  const started = sc(await server.client.callTool({ name: 'start_session', arguments: { language: 'python' } }));
  assert.equal(started.success, true, JSON.stringify(started));
  const base = `http://127.0.0.1:${listenedPort()}`;
  assert.equal(started.gateway_url, base, JSON.stringify(started));
  assert.ok(started.kernel_id, JSON.stringify(started));
  const tokenFile = path.join(server.stateDir, 'gateway-token');
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  const command = started.notebook_command;
  assert.ok(command, `no notebook_command: ${JSON.stringify(started)}`);
  assert.ok(command.startsWith(`KERNEL_ID=${started.kernel_id} jupyter notebook --gateway-url=${base} `), command);
  assert.ok(command.includes(`"$(cat ${tokenFile})"`), command);
  assert.ok(!command.includes(token) && !JSON.stringify(started).includes(token), 'the gateway token is in the result');

  const run = sc(await callExec(server.client, { language: 'python', code: 'x = 41', session_id: started.session_id }));
  assert.equal(run.status, 'success', JSON.stringify(run));
  assert.equal(run.kernel_id, started.kernel_id);
  assert.equal(run.gateway_url, base);

  const res = await fetch(`${started.gateway_url}/api/kernels`, { headers: { Authorization: `token ${token}` } });
  assert.equal(res.status, 200);
  const kernels = await res.json();
  assert.ok(kernels.some((k) => k.id === started.kernel_id), `${started.kernel_id} not in ${JSON.stringify(kernels)}`);
});

test('a fixed --http-listen on a taken port stops the server and says why', () => {
  const taken = `127.0.0.1:${listenedPort()}`; // the running server's own port
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-attach-'));
  try {
    const env = { ...process.env };
    delete env.CELLGATE_HTTP_LISTEN;
    const r = spawnSync(serverBinary(), ['mcp', '--state-dir', state, '--http-listen', taken], {
      input: '', encoding: 'utf8', timeout: 60000, env,
    });
    assert.notEqual(r.status, 0, r.stderr);
    assert.ok(r.stderr.includes(`cannot listen on ${taken}`), r.stderr);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});
