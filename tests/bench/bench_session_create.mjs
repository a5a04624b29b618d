// Session creation with and without the workspace limit (issue 9, finding 3): the time of a
// first execute_code (bash `true`) on a fresh session id, which creates the workspace (its
// own ext4 file system, or a plain directory), the container and runs the command, against
// two servers in the same run: --workspace-mb 1024 and --workspace-mb 0. Calls alternate
// between the servers so that load from elsewhere falls on both alike.
//
//   node tests/bench/bench_session_create.mjs [rounds=10]      (root, after scripts/setup.sh)
//
// Prints each configuration's median, mean, min and max in ms and the ratio of the medians.
// Not part of the test command: a benchmark, not a pass/fail check.

import { callExec, sc, startServer } from '../e2e/lib.mjs';

const ROUNDS = Number(process.argv[2] || 10);
const CONFIGS = [
  { name: '--workspace-mb 1024', env: { CELLGATE_WORKSPACE_MB: '1024' } },
  { name: '--workspace-mb 0', env: { CELLGATE_WORKSPACE_MB: '0' } },
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function createOnce(server, sessionId) {
  const started = process.hrtime.bigint();
  const r = await callExec(server.client, { language: 'bash', session_id: sessionId, code: 'true' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (sc(r).status !== 'success') throw new Error(`${sessionId}: ${JSON.stringify(sc(r))}`);
  await server.client.callTool({ name: 'close_session', arguments: { session_id: sessionId } });
  return ms;
}

const servers = [];
try {
  for (const c of CONFIGS)
    servers.push(await startServer({ name: 'bench-session-create', args: ['--http-listen', 'off'], env: c.env }));
  for (const s of servers) await createOnce(s, 'bench_warmup');     // runc and page cache warm
  const times = CONFIGS.map(() => []);
  for (let i = 0; i < ROUNDS; i++)
    for (let k = 0; k < servers.length; k++) times[k].push(await createOnce(servers[k], `bench_${i}`));
  const stats = times.map((xs) => ({
    median: median(xs), mean: xs.reduce((a, b) => a + b, 0) / xs.length, min: Math.min(...xs), max: Math.max(...xs),
  }));
  console.log(`session creation (first execute_code, bash \`true\`, fresh session id), ${ROUNDS} rounds:`);
  CONFIGS.forEach((c, k) => {
    const s = stats[k];
    console.log(`  ${c.name.padEnd(20)} median ${s.median.toFixed(1)} ms, mean ${s.mean.toFixed(1)} ms, `
      + `min ${s.min.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`);
  });
  console.log(`  ratio of medians (limit / no limit): ${(stats[0].median / stats[1].median).toFixed(2)}`
    + ` (${(stats[0].median - stats[1].median) >= 0 ? "+" : ""}${(stats[0].median - stats[1].median).toFixed(1)} ms)`);
} finally {
  for (const s of servers) await s.close();
}
