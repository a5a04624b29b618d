// The warm pool (issue 13, points 1 and 5): create -> first command, as the client sees it
// (the whole execute_code call), for a one-shot Python `print(1)`, JavaScript
// `console.log(1)` and bash `echo 1`, and a new Python session's first cell, against a
// pooled server (--pool python=1,javascript=1,bash=1) and an unpooled one (--pool 0) in
// the same run; then a burst of 20 new sessions at once against --pool python=1; then the
// floor: `runc run` of `python3 -c 'print(1)'` with a copy of a live cellgate sandbox's
// bundle (same root, mounts, seccomp, limits; a cgroup of its own).
//
//   node tests/bench/bench_pool.mjs [runs=50] [burst=20]      (root, after scripts/setup.sh)
//
// Pooled runs wait (untimed) until the pool is warm again before each call, as a pool at
// rest would be. Prints median, p95 and p99 in ms and the pooled/unpooled ratio of the
// medians. Not part of the test command: a benchmark, not a pass/fail check.

import { callExec, sc, sleep, startServer } from '../e2e/lib.mjs';
import { floor } from './floor.mjs';
import { fmt, pct } from './stats.mjs';

const RUNS = Number(process.argv[2] || 50);
const BURST = Number(process.argv[3] || 20);
const COMMON = ['--http-listen', 'off', '--log-level', 'debug', '--max-sessions', String(BURST + 5)];
const CASES = [
  { name: 'one-shot python', language: 'python', code: 'print(1)' },
  { name: 'one-shot javascript', language: 'javascript', code: 'console.log(1)' },
  { name: 'one-shot bash', language: 'bash', code: 'echo 1' },
  { name: 'new python session', language: 'python', code: 'print(1)', session: true },
];

// Counts the pool's "ready" lines as they arrive: stderrText() keeps only the log's tail,
// so counting in it undercounts once a long run has logged more than that.
const ready = new Map(); // server -> { python: n, javascript: n, bash: n }
function countReady(server) {
  const counts = { python: 0, javascript: 0, bash: 0 };
  for (const m of server.stderrText().matchAll(/pool: a (python|javascript|bash) sandbox is ready/g)) counts[m[1]]++;
  ready.set(server, counts);
  let partial = '';
  server.transport.stderr?.on('data', (chunk) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      const m = line.match(/pool: a (python|javascript|bash) sandbox is ready/);
      if (m) counts[m[1]]++;
    }
  });
}
const readyLines = (server, language) => ready.get(server)?.[language] ?? 0;

async function waitReady(server, language, n) {
  const end = Date.now() + 120000;
  while (readyLines(server, language) < n) {
    if (Date.now() > end) throw new Error(`pool never warmed a ${language} sandbox\n${server.stderrText().slice(-2000)}`);
    await sleep(20);
  }
}

let sessionNo = 0;
async function once(server, c) {
  const args = { language: c.language, code: c.code };
  if (c.session) args.session_id = `bench_${process.pid}_${sessionNo++}`;
  const t0 = process.hrtime.bigint();
  const r = await callExec(server.client, args);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const s = sc(r);
  if (s.status !== 'success' || s.stdout.trim() !== '1') throw new Error(`${c.name}: ${JSON.stringify(s)}`);
  if (c.session) await server.client.callTool({ name: 'close_session', arguments: { session_id: args.session_id } });
  return ms;
}

const claimed = { python: 0, javascript: 0, bash: 0 }; // pooled sandboxes taken so far

async function measure(server, c, pooled) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    if (pooled) {
      await waitReady(server, c.language, claimed[c.language] + 1);
      claimed[c.language]++;
    }
    times.push(await once(server, c));
  }
  return times;
}

const pooled = await startServer({ name: 'bench-pool', args: [...COMMON, '--pool', 'python=1,javascript=1,bash=1'] });
countReady(pooled);
const cold = await startServer({ name: 'bench-nopool', args: [...COMMON, '--pool', '0'] });
try {
  for (const c of CASES) await once(cold, c); // runc and the page cache warm
  console.log(`create -> first command, ${RUNS} runs each (pooled: the pool warm before each call)`);
  for (const c of CASES) {
    const p = await measure(pooled, c, true);
    const u = await measure(cold, c, false);
    console.log(`${c.name.padEnd(20)} pooled   ${fmt(p)}`);
    console.log(`${''.padEnd(20)} unpooled ${fmt(u)}   ratio of medians ${(pct(p, 50) / pct(u, 50)).toFixed(3)}`);
  }
  const live = await callExec(cold.client, { language: 'bash', session_id: 'bench_floor', code: 'true' });
  if (sc(live).status !== 'success') throw new Error('floor session');
  await sleep(2000); // the one-shot sandboxes' background teardowns end
  const f = floor(cold, RUNS);
  console.log(f ? `${'floor: runc run'.padEnd(20)}          ${fmt(f)}   (python3 -c 'print(1)', cellgate's bundle)` : 'floor: no bundle found');
} finally {
  await pooled.close();
  await cold.close();
}

const burst = await startServer({ name: 'bench-burst', args: [...COMMON, '--pool', 'python=1'] });
countReady(burst);
try {
  await waitReady(burst, 'python', 1);
  const t0 = process.hrtime.bigint();
  const times = [];
  const results = await Promise.all(Array.from({ length: BURST }, async (_, i) => {
    const s0 = process.hrtime.bigint();
    try {
      const r = sc(await callExec(burst.client, { language: 'python', session_id: `burst_${i}`, code: 'print(1)' }));
      times.push(Number(process.hrtime.bigint() - s0) / 1e6);
      return r.status === 'success' && r.stdout === '1\n';
    } catch {
      return false;
    }
  }));
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const claims = (burst.stderrText().match(/claimed by a session/g) || []).length;
  console.log(`burst of ${BURST} new sessions (--pool python=1): ${results.filter(Boolean).length} ok, ` +
    `${results.filter((x) => !x).length} errors, ${claims} from the pool; all done in ${(wall / 1000).toFixed(2)} s; per call ${fmt(times)}`);
} finally {
  await burst.close();
}
