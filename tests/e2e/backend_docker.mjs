// What only the Docker Engine API backend (--backend docker) has, against Podman's
// Docker-compatible service on a private socket: the engine named in the log, the labels
// app=cellgate, instance, session and kind, and the removal by label of a kill -9'd server's
// containers. The scenarios every backend shares are the contract (contract_docker.test.mjs).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, sleep, startRawServer, startServer } from './lib.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

const SKIP = podmanMissing();

let podman;
let socket;
let server;
let client;

// GETs PATH from the engine on the private socket; resolves with the parsed JSON.
function engine(pathname) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: socket, path: `/v1.41${pathname}` }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => {
        try { resolve(body ? JSON.parse(body) : null); } catch (err) { reject(new Error(`${pathname}: ${body}`)); }
      });
    });
    req.on('error', reject);
  });
}

// The containers labelled app=cellgate (and LABEL when given), as the engine lists them.
function labelled(label) {
  const labels = ['app=cellgate', ...(label ? [label] : [])];
  return engine(`/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`);
}

const dockerArgs = () => podman.args;

before(async () => {
  if (SKIP) return;
  podman = await startPodman();
  socket = podman.socket;
  server = await startServer({ name: 'backend-docker', args: [...dockerArgs(), '--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
  await podman?.stop();
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

test('the docker backend is chosen and logged, and hello world runs', { skip: SKIP }, async () => {
  assert.match(server.stderrText(), /sandbox backend: docker/);
  assert.match(server.stderrText(), /sandbox engine: Podman Engine/);
  const r = await callExec(client, { language: 'python', code: "print('Hello, World!')" });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'Hello, World!\n');
});

test('state across cells, and the session container is labelled', { skip: SKIP }, async () => {
  let r = await callExec(client, { language: 'python', code: 'x = 41', session_id: 'sess_dockerstate1' });
  expectStatus(r, 'success', server);
  r = await callExec(client, { language: 'python', code: 'print(x + 1)', session_id: 'sess_dockerstate1' });
  assert.equal(expectStatus(r, 'success', server).stdout, '42\n');
  const kinds = (await labelled()).map((c) => c.Labels['org.cellgate.kind']);
  assert.ok(kinds.includes('session'), `labels: ${JSON.stringify(kinds)}`);
  const one = (await labelled('org.cellgate.kind=session'))[0];
  assert.match(one.Labels['org.cellgate.instance'], /^[0-9a-f]{12}$/);
  assert.match(one.Labels['org.cellgate.session'], /^[0-9a-f]{12}$/);
  assert.match(one.Names[0], /^\/?cg-[0-9a-f]{12}-/);
});

test('after kill -9 of a server, the next start removes its containers by label', { skip: SKIP }, async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-docker-orphans-'));
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'orphans', version: '1' } } };
  const first = startRawServer(state, { args: [...dockerArgs(), '--cleanup-interval', '0'] });
  first.send(init);
  await first.next();
  first.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'execute_code', arguments: { language: 'python', code: 'print(1)', session_id: 'sess_dockerorph01' } } });
  const answer = await first.next();
  assert.equal(answer.result?.structuredContent?.stdout, '1\n', JSON.stringify(answer) + first.stderr());
  const instance = fs.readdirSync(path.join(state, 'instances'))[0];
  assert.match(instance, /^[0-9a-f]{12}$/);
  const mine = `org.cellgate.instance=${instance}`;
  assert.ok((await labelled(mine)).length >= 1, 'the session container is there');
  first.proc.kill('SIGKILL');
  await new Promise((resolve) => (first.proc.exitCode !== null || first.proc.signalCode ? resolve() : first.proc.once('exit', resolve)));
  assert.ok((await labelled(mine)).length >= 1, 'a killed server cannot clean up');

  const second = startRawServer(state, { args: [...dockerArgs(), '--cleanup-interval', '0'] });
  second.send(init);
  await second.next();
  let left = await labelled(mine);
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await sleep(100);
    left = await labelled(mine);
  }
  assert.deepEqual(left.map((c) => c.Names), [], second.stderr());
  second.proc.stdin.end();
  await new Promise((resolve) => (second.proc.exitCode !== null ? resolve() : second.proc.once('exit', resolve)));
  assert.deepEqual(await labelled(mine), []);
  fs.rmSync(state, { recursive: true, force: true });
});
