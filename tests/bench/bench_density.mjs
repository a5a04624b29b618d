// Density (issue 13, point 5): N live Python sessions with pandas loaded on this machine.
// Starts one server (stdio, the official MCP SDK client, the default Python pool), opens N
// sessions (default 100), each running `import pandas as pd; df = pd.DataFrame(...)`, and
// prints: memory per sandbox (its cgroup's memory usage, which counts the page cache its
// files brought in; and the PSS of its processes, where pages shared with the other
// sandboxes — the host's read-only /usr — count once across all of them), the server's
// RSS and PSS, MemAvailable before and after, and the warm-cell round trip of `x = 1` and
// `df['a'].sum()` with all N live, next to the same cells with 1 session live, measured
// in the same run. Closes everything and checks that no sandbox cgroup is left.
//
//   node tests/bench/bench_density.mjs [sessions=100] [concurrency=4]   (root, after scripts/setup.sh)
//
// Not part of the test command: a benchmark, not a pass/fail check.

import fs from 'node:fs';
import path from 'node:path';

import { callExec, sc, startServer } from '../e2e/lib.mjs';
import { fmt, pct } from './stats.mjs';

const N = Number(process.argv[2] || 100);
const CONCURRENCY = Number(process.argv[3] || 4);
const SAMPLE = Math.min(N, 20); // sessions the warm cells are timed on
const ROUNDS = 5;               // warm cells per sampled session and cell
const CGROUPS = '/sys/fs/cgroup/memory/cellgate';
const V2 = !fs.existsSync('/sys/fs/cgroup/memory');
const CG_ROOT = V2 ? '/sys/fs/cgroup/cellgate' : CGROUPS;
const MB = 1024 * 1024;
const LOAD = "import pandas as pd\ndf = pd.DataFrame({'a': range(1000)})\nprint(len(df))";

const meminfo = (key) => Number(fs.readFileSync('/proc/meminfo', 'utf8').match(new RegExp(`^${key}:\\s+(\\d+)`, 'm'))[1]) * 1024;
const readNum = (file) => { try { return Number(fs.readFileSync(file, 'utf8').trim()); } catch { return NaN; } };
const kb = (pid, file, key) => {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8').match(new RegExp(`^${key}:\\s+(\\d+)`, 'm'))[1]) * 1024;
  } catch { return 0; }
};
const sandboxes = () => (fs.existsSync(CG_ROOT) ? fs.readdirSync(CG_ROOT, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name) : []);
const usage = (id) => readNum(path.join(CG_ROOT, id, V2 ? 'memory.current' : 'memory.usage_in_bytes'));
const pids = (id) => {
  try { return fs.readFileSync(path.join(CG_ROOT, id, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean); } catch { return []; }
};
const mb = (bytes) => (bytes / MB).toFixed(1);

async function timed(client, sessionId, code) {
  const t0 = process.hrtime.bigint();
  const s = sc(await callExec(client, { language: 'python', session_id: sessionId, code }));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (s.status !== 'success') throw new Error(`${sessionId}: ${JSON.stringify(s).slice(0, 400)}`);
  return ms;
}

async function warmCells(client, ids) {
  const out = { x: [], sum: [] };
  for (let r = 0; r < ROUNDS; r++)
    for (const id of ids) {
      out.x.push(await timed(client, id, 'x = 1'));
      out.sum.push(await timed(client, id, "df['a'].sum()"));
    }
  return out;
}

const before = new Set(sandboxes());
const availBefore = meminfo('MemAvailable');
const server = await startServer({
  name: 'bench-density',
  args: ['--http-listen', 'off', '--max-sessions', String(N + 5), '--pool', 'python=1'],
});
const serverPid = server.transport.pid;
const ids = Array.from({ length: N }, (_, i) => `density_${process.pid}_${i}`);
try {
  await timed(server.client, ids[0], LOAD);
  const alone = await warmCells(server.client, [ids[0]]);
  const t0 = Date.now();
  let next = 1;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < N) await timed(server.client, ids[next++], LOAD);
  }));
  const openSeconds = (Date.now() - t0) / 1000;
  const crowd = await warmCells(server.client, ids.slice(0, SAMPLE));

  const mine = sandboxes().filter((id) => !before.has(id));
  const usages = mine.map(usage).filter((x) => Number.isFinite(x));
  const psses = mine.map((id) => pids(id).reduce((sum, pid) => sum + kb(pid, 'smaps_rollup', 'Pss'), 0));
  const availAfter = meminfo('MemAvailable');
  console.log(`${N} live Python sessions with pandas loaded (${mine.length} sandboxes incl. the pooled one), opened in ${openSeconds.toFixed(1)} s with ${CONCURRENCY} at a time`);
  console.log(`memory per sandbox, cgroup usage: median ${mb(pct(usages, 50))} MB, p95 ${mb(pct(usages, 95))} MB, total ${mb(usages.reduce((a, b) => a + b, 0))} MB`);
  console.log(`memory per sandbox, PSS of its processes: median ${mb(pct(psses, 50))} MB, total ${mb(psses.reduce((a, b) => a + b, 0))} MB`);
  console.log(`server (pid ${serverPid}): RSS ${mb(kb(serverPid, 'status', 'VmRSS'))} MB, PSS ${mb(kb(serverPid, 'smaps_rollup', 'Pss'))} MB, threads ${kb(serverPid, 'status', 'Threads') / 1024}`);
  console.log(`MemAvailable: ${mb(availBefore)} MB before, ${mb(availAfter)} MB with all live: ${mb((availBefore - availAfter) / N)} MB per session`);
  console.log(`warm cell 'x = 1'          1 live: ${fmt(alone.x)}`);
  console.log(`                      ${String(N).padStart(4)} live: ${fmt(crowd.x)}   ratio of medians ${(pct(crowd.x, 50) / pct(alone.x, 50)).toFixed(2)}`);
  console.log(`warm cell "df['a'].sum()"  1 live: ${fmt(alone.sum)}`);
  console.log(`                      ${String(N).padStart(4)} live: ${fmt(crowd.sum)}   ratio of medians ${(pct(crowd.sum, 50) / pct(alone.sum, 50)).toFixed(2)}`);
} finally {
  await server.close();
}
const deadline = Date.now() + 60000;
let left = sandboxes().filter((id) => !before.has(id));
while (left.length > 0 && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 500));
  left = sandboxes().filter((id) => !before.has(id));
}
console.log(left.length === 0 ? 'after close: no sandbox cgroup left' : `after close: ${left.length} sandbox cgroup(s) left: ${left.join(' ')}`);
process.exit(left.length === 0 ? 0 : 1);
