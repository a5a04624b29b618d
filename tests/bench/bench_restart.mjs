// Restart (issue 13, point 5): the time from a server's start (the process spawned) to the
// first answered call on a session the previous server kept (--keep-sessions on): the
// kernel re-adopted, `print(a + 1)` answered from the state `a = 41` set before the
// restart. Measured in the same run against the same path without keeping: a server's
// start to the first answered call of a new session (sandbox and kernel started cold),
// which is what a restart cost before. Rounds alternate between the two.
//
//   node tests/bench/bench_restart.mjs [rounds=7]      (root, after scripts/setup.sh)
//
// Prints each path's median, min and max in ms and the ratio of the medians. Not part of
// the test command: a benchmark, not a pass/fail check.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';

import { serverBinary, sleep } from '../e2e/lib.mjs';

const ROUNDS = Number(process.argv[2] || 7);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function start(state, keep) {
  const transport = new StdioClientTransport({
    command: serverBinary(),
    args: ['mcp', '--state-dir', state, '--http-listen', 'off', '--keep-sessions', keep ? 'on' : 'off'],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench-restart', version: '0' }, { capabilities: {} });
  await client.connect(transport, { timeout: 30000 });
  return { client, transport };
}

async function stop(server) {
  const pid = server.transport.pid;
  await server.client.close();
  for (let i = 0; i < 400; i++) {
    try { process.kill(pid, 0); } catch { return; }
    await sleep(25);
  }
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  return r.structuredContent;
}

// One restart: spawn, handshake, first answered call on the kept session. Returns ms.
async function restartOnce(state, sid) {
  const t0 = process.hrtime.bigint();
  const server = await start(state, true);
  const r = await call(server.client, 'send_to_session', { session_id: sid, code: 'print(a + 1)' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.stdout?.trim() !== '42') throw new Error(`re-adopted session answered ${JSON.stringify(r)}`);
  await stop(server);
  return ms;
}

// One start without keeping: spawn, handshake, first answered call of a new session.
async function coldOnce(state) {
  const t0 = process.hrtime.bigint();
  const server = await start(state, false);
  const r = await call(server.client, 'execute_code', { language: 'python', session_id: 'cold', code: 'a = 41; print(a + 1)' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.stdout?.trim() !== '42') throw new Error(`cold session answered ${JSON.stringify(r)}`);
  await stop(server);
  return ms;
}

const keptState = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-restart-'));
const coldState = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-cold-'));
try {
  const first = await start(keptState, true);
  const sid = (await call(first.client, 'start_session', { language: 'python' })).session_id;
  await call(first.client, 'send_to_session', { session_id: sid, code: 'a = 41' });
  await stop(first);
  await coldOnce(coldState); // runc and page cache warm
  const kept = [], cold = [];
  for (let i = 0; i < ROUNDS; i++) {
    kept.push(await restartOnce(keptState, sid));
    cold.push(await coldOnce(coldState));
  }
  const line = (name, xs) => console.log(`  ${name.padEnd(34)} median ${median(xs).toFixed(1)} ms, `
    + `min ${Math.min(...xs).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`);
  console.log(`server start -> first answered call, ${ROUNDS} rounds:`);
  line('re-adopted session (--keep-sessions)', kept);
  line('new session (no keeping, cold)', cold);
  console.log(`  ratio re-adopted / cold: ${(median(kept) / median(cold)).toFixed(2)}`);
} finally {
  // A server without keeping removes what the kept one left.
  await stop(await start(keptState, false));
  fs.rmSync(keptState, { recursive: true, force: true });
  fs.rmSync(coldState, { recursive: true, force: true });
}
