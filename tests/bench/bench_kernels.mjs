// What a kernel costs (issue 27, point 4), R beside Python in the same run: the cold start of
// a one-shot execute_code (--pool 0: sandbox, kernel start, the cell), the same call served by
// the warm pool (--pool r=1,python=1; each call waits, untimed, until the pool has refilled),
// and the memory of an idle session (list_sessions' memory_mb, the sandbox's cgroup, after
// one trivial cell). Times are the whole MCP call as the client sees it; the languages take
// turns, so both see the same machine.
//
//   node tests/bench/bench_kernels.mjs [runs=20] [sessions=5]    (root, after scripts/setup.sh)
//
// Prints p50/p95/p99 per figure and the R/Python ratio of the medians. Not part of the test
// command: a benchmark, not a pass/fail check.

import { callExec, sc, sleep, startServer } from '../e2e/lib.mjs';
import { fmt, pct } from './stats.mjs';

const RUNS = Number(process.argv[2] || 20);
const SESSIONS = Number(process.argv[3] || 5);
const COMMON = ['--http-listen', 'off', '--log-level', 'debug'];
const LANGUAGES = [
  { name: 'r', code: 'cat(1, "\\n")', expect: '1 \n' },
  { name: 'python', code: 'print(1)', expect: '1\n' },
];

// The pool's "ready" lines per language, counted as they arrive (stderrText() keeps a tail).
function countReady(server) {
  const counts = { r: 0, python: 0 };
  for (const m of server.stderrText().matchAll(/pool: a (r|python) sandbox is ready/g)) counts[m[1]]++;
  let partial = '';
  server.transport.stderr?.on('data', (chunk) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      const m = line.match(/pool: a (r|python) sandbox is ready/);
      if (m) counts[m[1]]++;
    }
  });
  return counts;
}

async function waitReady(counts, language, n, server) {
  const end = Date.now() + 120000;
  while (counts[language] < n) {
    if (Date.now() > end) throw new Error(`the pool never warmed a ${language} sandbox\n${server.stderrText().slice(-2000)}`);
    await sleep(20);
  }
}

// One one-shot call: its time in ms, checked.
async function once(server, lang) {
  const t0 = process.hrtime.bigint();
  const s = sc(await callExec(server.client, { language: lang.name, code: lang.code }));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (s.status !== 'success' || s.stdout !== lang.expect) throw new Error(`${lang.name}: ${JSON.stringify(s).slice(0, 600)}`);
  return ms;
}

// An idle session's memory: a trivial cell, then list_sessions' memory_mb.
async function idleMemory(server, lang, i) {
  const session_id = `bench_mem_${lang.name}_${process.pid}_${i}`;
  const s = sc(await callExec(server.client, { language: lang.name, code: lang.code, session_id }));
  if (s.status !== 'success') throw new Error(`${lang.name}: ${JSON.stringify(s).slice(0, 600)}`);
  await sleep(1000);
  const listed = sc(await server.client.callTool({ name: 'list_sessions', arguments: {} })).sessions;
  const mb = listed.find((x) => x.session_id === session_id)?.memory_mb;
  await server.client.callTool({ name: 'close_session', arguments: { session_id } });
  return mb;
}

const line = (label, xs, unit = 'ms') =>
  unit === 'ms' ? `${label.padEnd(44)} ${fmt(xs)}` : `${label.padEnd(44)} p50 ${pct(xs, 50).toFixed(1)}  min ${Math.min(...xs).toFixed(1)}  max ${Math.max(...xs).toFixed(1)} MB (n=${xs.length})`;
const ratio = (a, b) => `R/Python ratio of medians: ${(pct(a.r, 50) / pct(a.python, 50)).toFixed(2)}${b ?? ''}`;

const cold = await startServer({ name: 'bench-kernels-cold', args: [...COMMON, '--pool', '0'] });
const pooled = await startServer({ name: 'bench-kernels-pool', args: [...COMMON, '--pool', 'r=1,python=1'] });
const ready = countReady(pooled);
const claimed = { r: 0, python: 0 };
try {
  for (const lang of LANGUAGES) await once(cold, lang); // runc and the page cache warm
  const coldTimes = { r: [], python: [] };
  const poolTimes = { r: [], python: [] };
  const memory = { r: [], python: [] };
  for (let i = 0; i < RUNS; i++)
    for (const lang of LANGUAGES) coldTimes[lang.name].push(await once(cold, lang));
  for (let i = 0; i < RUNS; i++)
    for (const lang of LANGUAGES) {
      await waitReady(ready, lang.name, ++claimed[lang.name], pooled);
      poolTimes[lang.name].push(await once(pooled, lang));
    }
  for (let i = 0; i < SESSIONS; i++)
    for (const lang of LANGUAGES) memory[lang.name].push(await idleMemory(cold, lang, i));

  console.log(`one-shot execute_code, ${RUNS} runs each; idle session memory, ${SESSIONS} sessions each`);
  for (const lang of LANGUAGES) console.log(line(`${lang.name} cold start (--pool 0)`, coldTimes[lang.name]));
  console.log(`  ${ratio(coldTimes)}`);
  for (const lang of LANGUAGES) console.log(line(`${lang.name} pooled first cell (--pool ${lang.name}=1)`, poolTimes[lang.name]));
  console.log(`  ${ratio(poolTimes)}`);
  for (const lang of LANGUAGES) console.log(line(`${lang.name} idle session memory_mb`, memory[lang.name], 'MB'));
  console.log(`  ${ratio(memory)}`);
} finally {
  await pooled.close();
  await cold.close();
}
