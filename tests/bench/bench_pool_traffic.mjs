// The warm pool under traffic (issue 29, point 4), base against this build in one run, on
// a busy machine: while another server runs tests/bench/bench_density.mjs beside them
// (restarted whenever it ends, so the load lasts; the last run is let finish), CALLS one-shot Python `print(1)` calls
// GAP ms apart to each server (the two interleaved, each call timed as the client sees the
// whole execute_code), then BURSTS bursts of 5 calls back to back (each waited for before
// the next), 10 s apart. Prints p50/p95/p99 of the spaced calls and the bursts per server,
// the misses (calls the pool did not serve: execute_code calls minus the log's "claimed by
// a one-shot run" lines, for both servers; and this build's cellgate_pool_misses_total and
// target from /metrics), each call's time with its misses marked, and the load average
// beside each phase.
//
//   node tests/bench/bench_pool_traffic.mjs [calls=30] [gap_ms=2000] [bursts=4] [pool=python=4] [density=100]
//   CELLGATE_BASE_BIN (default /work/helpers/cellgate-base) and CELLGATE_BIN (default
//   build/cellgate) choose the two binaries; the density load runs CELLGATE_BIN.
//
// Not part of the test command: a benchmark, not a pass/fail check.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { DEFAULT_BIN, callExec, sc, sleep, startServer } from '../e2e/lib.mjs';
import { fmt, pct } from './stats.mjs';

const CALLS = Number(process.argv[2] || 30);
const GAP_MS = Number(process.argv[3] || 2000);
const BURSTS = Number(process.argv[4] || 4);
const POOL = process.argv[5] || 'python=4';
const DENSITY = process.argv[6] || '100';
const BURST = 5;
const MINE = process.env.CELLGATE_BIN || DEFAULT_BIN;
const BASE = process.env.CELLGATE_BASE_BIN || '/work/helpers/cellgate-base';
const HERE = path.dirname(fileURLToPath(import.meta.url));
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

async function start(name, bin) {
  process.env.CELLGATE_BIN = bin;
  const server = await startServer({ name, args: ['--http-listen', '127.0.0.1:0', '--log-level', 'debug', '--pool', POOL, '--max-sessions', '30'] });
  process.env.CELLGATE_BIN = MINE;
  // Counts the claims as the lines arrive: stderrText() keeps only the log's tail.
  server.claims = 0;
  let partial = '';
  server.transport.stderr?.on('data', (chunk) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop();
    server.claims += lines.filter((l) => /claimed by a one-shot run/.test(l)).length;
  });
  server.label = name;
  server.spaced = [];
  server.burst = [];
  server.calls = [];
  return server;
}

async function metrics(server) {
  // Read once: the server's stderr the helper keeps is a window that moves on.
  server.port ??= server.stderrText().match(/listening on http:\/\/[^:]+:(\d+)/)?.[1];
  const port = server.port;
  const admin = fs.readFileSync(path.join(server.stateDir, 'admin-token'), 'utf8').trim();
  return (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${admin}` } })).text();
}
const sample = (text, key) => Number(text.split('\n').find((l) => l.startsWith(`${key} `))?.slice(key.length + 1) ?? NaN);

// Waits until the pool holds N ready sandboxes, or its target when /metrics has one (this
// build's shrinks when idle).
async function waitFull(server, n) {
  const end = Date.now() + 600000;
  const full = (text) => sample(text, 'cellgate_pool_sandboxes') >= Math.min(n, sample(text, 'cellgate_pool_target_sandboxes{language="python"}') || n);
  while (!full(await metrics(server))) {
    if (Date.now() > end) throw new Error(`${server.label}: the pool never filled\n${server.stderrText().slice(-2000)}`);
    await sleep(200);
  }
}

// One call; its time (ms) and whether the pool served it (a claim logged meanwhile) go to
// SERVER.calls as "<ms>" or "<ms>*" (a miss), printed per call after each phase.
async function once(server) {
  const claims = server.claims;
  const t0 = process.hrtime.bigint();
  const r = sc(await callExec(server.client, { language: 'python', code: 'print(1)' }));
  if (r.status !== 'success' || r.stdout !== '1\n') throw new Error(`${server.label}: ${JSON.stringify(r)}`);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await sleep(50); // the claim's log line, written before the answer, read from the pipe
  server.calls.push(`${ms.toFixed(0)}${server.claims > claims ? '' : '*'}`);
  return ms;
}
const perCall = (s) => { const text = s.calls.join(' '); s.calls = []; return text; };

// The load: bench_density.mjs on a server of its own, started again whenever it ends.
let loading = true;
let density = null;
function startLoad() {
  density = spawn(process.execPath, [path.join(HERE, 'bench_density.mjs'), DENSITY, '4'], {
    env: { ...process.env, CELLGATE_BIN: MINE }, stdio: 'ignore' });
  density.on('exit', () => { if (loading) startLoad(); });
}

const size = Number(POOL.match(/python=(\d+)/)?.[1] ?? 1);
const servers = [await start('base', BASE), await start('this build', MINE)];
try {
  await Promise.all(servers.map((s) => waitFull(s, size)));
  for (const s of servers) await once(s); // the page cache warm
  for (const s of servers) perCall(s);
  await Promise.all(servers.map((s) => waitFull(s, size)));
  startLoad();
  await sleep(15000); // the density server is opening sessions
  console.log(`--pool ${POOL}, load: bench_density.mjs ${DENSITY} 4 on a third server; base ${BASE}, this build ${MINE}`);
  console.log(`spaced: ${CALLS} one-shot print(1) calls ${GAP_MS} ms apart to each server (load average before: ${load()})`);
  const claims0 = servers.map((s) => s.claims);
  for (let i = 0; i < CALLS; i++) {
    const t0 = Date.now();
    for (const s of i % 2 ? [...servers].reverse() : servers) s.spaced.push(await once(s));
    await sleep(Math.max(0, GAP_MS - (Date.now() - t0)));
  }
  const text1 = await metrics(servers[1]);
  for (const [k, s] of servers.entries())
    console.log(`  ${s.label.padEnd(10)} ${fmt(s.spaced)}  max ${Math.max(...s.spaced).toFixed(1)}  misses ${CALLS - (s.claims - claims0[k])}\n    per call (ms, * a miss): ${perCall(s)}`);
  console.log(`  ratio of p99s (this build / base) ${(pct(servers[1].spaced, 99) / pct(servers[0].spaced, 99)).toFixed(3)}; ` +
    `this build's /metrics: misses ${sample(text1, 'cellgate_pool_misses_total{language="python"}')}, ` +
    `target ${sample(text1, 'cellgate_pool_target_sandboxes{language="python"}')} (load average after: ${load()})`);

  console.log(`bursts: ${BURSTS} x ${BURST} calls back to back to each server, 10 s apart (load average before: ${load()})`);
  const claims1 = servers.map((s) => s.claims);
  const misses1 = sample(text1, 'cellgate_pool_misses_total{language="python"}');
  for (let b = 0; b < BURSTS; b++) {
    for (const s of b % 2 ? [...servers].reverse() : servers)
      for (let i = 0; i < BURST; i++) s.burst.push(await once(s));
    await sleep(10000);
  }
  const text2 = await metrics(servers[1]);
  for (const [k, s] of servers.entries())
    console.log(`  ${s.label.padEnd(10)} ${fmt(s.burst)}  misses ${BURSTS * BURST - (s.claims - claims1[k])} of ${BURSTS * BURST}\n    per call (ms, * a miss): ${perCall(s)}`);
  console.log(`  this build's /metrics: misses ${sample(text2, 'cellgate_pool_misses_total{language="python"}') - misses1} in the bursts, ` +
    `hits ${sample(text2, 'cellgate_pool_hits_total{language="python"}')} in all, target ${sample(text2, 'cellgate_pool_target_sandboxes{language="python"}')} (load average after: ${load()})`);
} finally {
  for (const s of servers) await s.close();
  // The density run in progress ends by itself, closing its sessions (not killed: it would
  // leave its server's state behind).
  loading = false;
  if (density && density.exitCode === null) await new Promise((r) => density.on('exit', r));
}
