// Workspace size (issue 29, point 1): a warm `x = 1` in one Python session with 0, 20,000
// and 200,000 files in its /mnt/data, measured at the client (the execute_code round trip).
// Before, every run walked the whole workspace twice (before and after) to find what it
// created, modified and deleted; now the session's index follows fanotify events, so the
// cost must not grow with the files: the target is p50(200k) / p50(0) <= 1.2. The files
// are made by the session itself (200 directories of 1,000 empty files). Each binary gets
// its own server and session; BASE_BIN (optional) is measured first, then CELLGATE_BIN (or
// build/cellgate), in the same run.
//
//   BASE_BIN=/work/helpers/cellgate-base node tests/bench/bench_workspace.mjs [runs=30]
//
// Root (the workspace is its own loop-mounted ext4, --workspace-inodes 300000). Prints
// p50/p95/p99 per size and binary and the ratios; beside them, what is outside the kernel's
// own time (the round trip less the result's duration_ms: where the workspace scan was)
// and the server's CPU time per run (/proc/PID/stat), both steadier than the round trip on
// a busy machine. Not part of the test command.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';

import { serverBinary, sleep } from '../e2e/lib.mjs';
import { fmt, pct } from './stats.mjs';

const RUNS = Number(process.argv[2] || 30);
const SIZES = [0, 20000, 200000];
const PER_DIR = 1000;

async function call(client, code, sid) {
  const t0 = process.hrtime.bigint();
  const r = await client.callTool(
    { name: 'execute_code', arguments: { language: 'python', session_id: sid, code, timeout: 300 } },
    undefined,
    { timeout: 600000 },
  );
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const s = r.structuredContent;
  if (s?.status !== 'success') throw new Error(`run failed: ${JSON.stringify(r).slice(0, 2000)}`);
  return { ms, s };
}

// Makes the workspace hold WANT files (it holds HAVE): directories of PER_DIR files.
async function grow(client, sid, have, want) {
  for (let d = have / PER_DIR; d < want / PER_DIR; d += 20) {
    const last = Math.min(want / PER_DIR, d + 20);
    await call(client, [
      'import os',
      `for d in range(${d}, ${last}):`,
      "    os.makedirs(f'/mnt/data/set/d{d:03d}', exist_ok=True)",
      `    for i in range(${PER_DIR}):`,
      "        os.close(os.open(f'/mnt/data/set/d{d:03d}/{i:04d}.dat', os.O_CREAT | os.O_WRONLY, 0o644))",
    ].join('\n'), sid);
  }
}

// The server's user + system CPU time so far, in ms.
function cpu(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // USER_HZ is 100
}

async function measure(bin) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-ws-'));
  const transport = new StdioClientTransport({
    command: bin,
    args: ['mcp', '--state-dir', state, '--http-listen', 'off', '--workspace-inodes', '300000'],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench-workspace', version: '0' }, { capabilities: {} });
  await client.connect(transport, { timeout: 60000 });
  const sid = 'sess_benchws0001';
  const out = {};
  try {
    let have = 0;
    for (const size of SIZES) {
      await grow(client, sid, have, size);
      have = size;
      await call(client, 'x = 1', sid); // warm: the run after the files were made
      const times = [];
      const outside = [];
      const cpu0 = cpu(transport.pid);
      for (let i = 0; i < RUNS; i++) {
        const { ms, s } = await call(client, 'x = 1', sid);
        if (s.artifacts_created.length || s.artifacts_modified.length || s.artifacts_deleted.length)
          throw new Error(`x = 1 changed files: ${JSON.stringify(s).slice(0, 500)}`);
        times.push(ms);
        outside.push(ms - s.duration_ms);
      }
      const cpuPerRun = (cpu(transport.pid) - cpu0) / RUNS;
      out[size] = { times, outside, cpuPerRun };
      console.log(`  ${path.basename(bin)} ${String(size).padStart(6)} files: ${fmt(times)}; outside the kernel p50 ${pct(outside, 50).toFixed(1)} ms; server CPU ${cpuPerRun.toFixed(2)} ms/run  (load ${os.loadavg()[0].toFixed(2)})`);
    }
    await call(client, "import shutil; shutil.rmtree('/mnt/data/set')", sid);
  } finally {
    // Let the server unmount its session's file systems before the state goes.
    const pid = transport.pid;
    await client.close();
    for (let i = 0; i < 1200; i++) {
      try { process.kill(pid, 0); } catch { break; }
      await sleep(50);
    }
    try {
      fs.rmSync(state, { recursive: true, force: true });
    } catch (e) {
      console.log(`  (left ${state}: ${e.code})`);
    }
  }
  return out;
}

const bins = [process.env.BASE_BIN, serverBinary()].filter(Boolean);
const results = [];
for (const bin of bins) {
  console.log(`${bin}:`);
  results.push([bin, await measure(bin)]);
}
console.log('\nwarm `x = 1`, p50 / p95 ms, and p50 ratios to 0 files:');
for (const [bin, out] of results) {
  const cells = SIZES.map((n) => `${n}: ${pct(out[n].times, 50).toFixed(1)} / ${pct(out[n].times, 95).toFixed(1)}`);
  const ratios = SIZES.slice(1).map((n) => `${n}/0 = ${(pct(out[n].times, 50) / pct(out[0].times, 50)).toFixed(2)}`);
  const cpus = SIZES.map((n) => `${n}: ${out[n].cpuPerRun.toFixed(2)}`);
  console.log(`  ${bin}\n    ${cells.join('   ')}\n    ${ratios.join('   ')}\n    server CPU ms/run ${cpus.join('   ')}`);
}
