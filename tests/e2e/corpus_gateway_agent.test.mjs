// Hostile corpus, what a front end attached to an agent's kernel does to the agent (issue 23,
// points 9 and 12): a restart from the notebook between two agent calls is told to the agent
// (kernel_restarted and a notice, once), and DELETE of the agent's kernel detaches the front
// end (204, as a shutdown looks to Jupyter) while the kernel and its state live on.
// tests/gateway/test_gateway_hostile.py runs the same DELETE through a real Jupyter Server.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before } from 'node:test';

import { callExec, sc, startHttpServer } from './lib.mjs';
import { caseTable } from './corpus.mjs';
import { gatewayRest } from './gateway_ws_raw.mjs';

const table = caseTable('corpus_gateway_agent');
const TOKEN = crypto.randomBytes(16).toString('hex');
const SESSION = 'sess_gwagent0001';

let server;
let client;
let kernelId;

const rest = (method, urlPath, body) => gatewayRest(server.port, TOKEN, method, urlPath, body);
const brief = (r) => JSON.stringify({ ...sc(r), outputs: undefined }).slice(0, 1500);
const run = (code) => callExec(client, { language: 'python', session_id: SESSION, code });

before(async () => {
  server = await startHttpServer({ args: ['--gateway-token', TOKEN] });
  ({ client } = await server.connect());
  const r = await run('a = 41');
  assert.equal(sc(r).status, 'success', brief(r));
  kernelId = sc(r).kernel_id;
  assert.ok(kernelId, brief(r));
});

after(async () => {
  await server?.close();
});

table("a notebook restarts the agent's kernel between two calls", 'next result: kernel_restarted true + notice, once', async () => {
  const restarted = await rest('POST', `/api/kernels/${kernelId}/restart`, {});
  assert.equal(restarted.status, 200, JSON.stringify(restarted));
  const r = await run('print("a" in globals())');
  assert.equal(sc(r).status, 'success', brief(r));
  assert.equal(sc(r).stdout, 'False\n', 'the restart wiped the state');
  assert.equal(sc(r).kernel_restarted, true, brief(r));
  assert.match(sc(r).notice ?? '', /restarted from a Jupyter front end/, brief(r));
  assert.match(r.content[0].text, /\[notice\].*front end/s, 'the notice is in the text block too');
  const next = await run('pass');
  assert.equal(sc(next).kernel_restarted, false, `told once: ${brief(next)}`);
  assert.equal(sc(next).notice, undefined, brief(next));
  return `notice: ${sc(r).notice}`;
});

table("DELETE of the agent's kernel by a front end that attached to it", '204; the kernel and its state live on', async () => {
  const set = await run('kept = 42');
  assert.equal(sc(set).status, 'success', brief(set));
  const attached = await rest('POST', '/api/kernels', { name: `attach-${kernelId}`, env: {} });
  assert.equal(attached.status, 201, JSON.stringify(attached));
  const del = await rest('DELETE', `/api/kernels/${kernelId}`);
  assert.equal(del.status, 204, JSON.stringify(del));
  const model = await rest('GET', `/api/kernels/${kernelId}`);
  assert.equal(model.status, 200, `the kernel is still there: ${JSON.stringify(model)}`);
  const r = await run('print(kept)');
  assert.equal(sc(r).stdout, '42\n', brief(r));
  assert.equal(sc(r).kernel_restarted, false, brief(r));
  return `DELETE ${del.status}; GET ${model.status}; kept=42`;
});
