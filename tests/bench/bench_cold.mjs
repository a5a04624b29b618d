// The cold path (issue 29, point 5): a one-shot Python `print(1)` and JavaScript
// `console.log(1)` with no pool (--pool 0), as the client sees it (the whole execute_code
// call), on two servers in the same run taking turns call by call: BASE (env
// CELLGATE_BASE_BIN, e.g. /work/helpers/cellgate-base) and this tree's (CELLGATE_BIN, else
// build/cellgate). Then where this tree's time went, phase by phase, from its debug log
// (start ...: lines), and the floor: `runc run` of `python3 -c 'print(1)'` and of
// `node -e 'console.log(1)'` with a copy of a live sandbox's bundle.
//
//   CELLGATE_BASE_BIN=/work/helpers/cellgate-base node tests/bench/bench_cold.mjs [runs=20]
//
// Prints p50 / p95 / p99 in ms and the ratios of the medians (to the base, to the floor).
// Not part of the test command: a benchmark, not a pass/fail check.

import os from 'node:os';

import { callExec, sc, serverBinary, sleep, startServer } from '../e2e/lib.mjs';
import { floor } from './floor.mjs';
import { fmt, pct } from './stats.mjs';

const RUNS = Number(process.argv[2] || 20);
const ARGS = ['--http-listen', 'off', '--log-level', 'debug', '--pool', '0'];
const CASES = [
  { language: 'python', code: 'print(1)', floor: ['python3', '-c', 'print(1)'] },
  { language: 'javascript', code: 'console.log(1)', floor: ['node', '-e', 'console.log(1)'] },
];
// The phases this tree's debug log names, in order (bridge/cg_session.c, cg_kernel.c).
const PHASES = [
  ['workspace file system', /start \S+: workspace file system ([\d.]+) ms/],
  ['workspace scan, dirs', /start \S+: workspace file system [\d.]+ ms, workspace scan and dirs ([\d.]+) ms/],
  ['container (runc run)', /start \S+: container ([\d.]+) ms/],
  ['egress, stats', /start \S+: container [\d.]+ ms, egress and stats ([\d.]+) ms/],
  ['connection file, exec', /kernel in \S+: connection file, sockets and exec ([\d.]+) ms/],
  ['kernel: sockets bound', /sockets bound after ([\d.]+) ms/],
];

async function once(server, c) {
  const mark = server.stderrText().length;
  const t0 = process.hrtime.bigint();
  const r = await callExec(server.client, { language: c.language, code: c.code });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const s = sc(r);
  if (s.status !== 'success' || s.stdout.trim() !== '1') throw new Error(`${c.language}: ${JSON.stringify(s)}`);
  return { ms, log: server.stderrText().slice(mark) };
}

// This tree's phases of one call from its log: each phase's ms, and what is left
// (the handshake after the sockets are bound, the cell, the answer's way back).
function phases(log, total) {
  const out = {};
  for (const [name, re] of PHASES) {
    const m = log.match(re);
    out[name] = m ? Number(m[1]) : NaN;
  }
  const ready = log.match(/kernel_info_reply after ([\d.]+) ms, iopub live after ([\d.]+) ms, ready after ([\d.]+) ms \((\d+) request/);
  out['kernel: handshake'] = ready ? Number(ready[3]) - out['kernel: sockets bound'] : NaN;
  const extra = { requests: ready ? Number(ready[4]) : NaN,
    'iopub wait after reply': ready ? Math.max(0, Number(ready[2]) - Number(ready[1])) : NaN };
  const known = Object.values(out).reduce((a, v) => a + v, 0);
  out['cell and answer'] = total - known;
  return { ...out, ...extra };
}

const base = process.env.CELLGATE_BASE_BIN;
if (!base) {
  console.error('set CELLGATE_BASE_BIN to the base binary (e.g. /work/helpers/cellgate-base)');
  process.exit(2);
}
const mine = serverBinary();
// startServer takes the binary from CELLGATE_BIN in this process's environment.
const servers = [];
for (const [name, bin] of [['base', base], ['this tree', mine]]) {
  process.env.CELLGATE_BIN = bin;
  servers.push([name, await startServer({ name: `bench-cold-${servers.length}`, args: ARGS })]);
}
process.env.CELLGATE_BIN = mine;

try {
  for (const [, s] of servers) for (const c of CASES) await once(s, c); // runc and the page cache warm
  console.log(`one-shot, --pool 0, ${RUNS} runs each, the two servers taking turns; load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`base: ${base}\nthis tree: ${mine}`);
  const live = await callExec(servers[1][1].client, { language: 'bash', session_id: 'bench_floor', code: 'true' });
  if (sc(live).status !== 'success') throw new Error('floor session');
  for (const c of CASES) {
    const times = { base: [], 'this tree': [] };
    const split = [];
    for (let i = 0; i < RUNS; i++)
      for (const [name, s] of i % 2 ? [...servers].reverse() : servers) {
        const r = await once(s, c);
        times[name].push(r.ms);
        if (name === 'this tree') split.push(phases(r.log, r.ms));
      }
    await sleep(1000); // the one-shot sandboxes' background teardowns end
    const f = floor(servers[1][1], RUNS, c.floor);
    const p50 = (xs) => pct(xs, 50);
    console.log(`\n${c.language}`);
    console.log(`  base       ${fmt(times.base)}`);
    console.log(`  this tree  ${fmt(times['this tree'])}   ratio of medians to base ${(p50(times['this tree']) / p50(times.base)).toFixed(3)}`);
    if (f) {
      console.log(`  floor      ${fmt(f)}   (runc run ${c.floor.join(' ')}, cellgate's bundle)`);
      console.log(`  medians / floor: base ${(p50(times.base) / p50(f)).toFixed(2)}x, this tree ${(p50(times['this tree']) / p50(f)).toFixed(2)}x`);
    }
    console.log('  this tree, phase by phase (p50 / p95 ms):');
    for (const k of Object.keys(split[0])) {
      const xs = split.map((p) => p[k]).filter((x) => !Number.isNaN(x));
      if (xs.length) console.log(`    ${k.padEnd(24)} ${pct(xs, 50).toFixed(1).padStart(8)} ${pct(xs, 95).toFixed(1).padStart(8)}`);
    }
  }
} finally {
  for (const [, s] of servers) await s.close();
}
