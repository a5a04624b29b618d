// Image preview attacks (issue 23, point 2): the server's peak RSS and its longest main-loop
// stall while a sandbox displays (a) a progressive JPEG of 2048 x 2048 pixels with 30,000
// empty scans (300 KB) and (b) a PNG with 400 zTXt chunks that inflate to 7.9 MB each
// (3.2 MB). One server (stdio, the official MCP SDK client); one session runs the attacks.
// For each: VmHWM is reset (clear_refs 5) before the call, and during it a pinger sends an MCP
// ping every 10 ms on the same connection (one at a time) and records the longest gap between
// two answers. Printed per attack: the call's wall time, the largest ping gap, the server's
// own CPU time (utime + stime of all its threads, its children excluded) and its peak RSS
// above the RSS before the call.
//
//   node tests/bench/bench_attack_image.mjs [scans=30000] [chunks=400]   (root, after scripts/setup.sh)
//   CELLGATE_BIN=/work/base/build/cellgate node tests/bench/bench_attack_image.mjs   (another build)
//
// Not part of the test command: a benchmark, not a pass/fail check.

import { callExec, sc, serverBinary, startServer } from '../e2e/lib.mjs';
import { cpuSeconds, jpegScansCode, memoryMb, pngZtxtCode, resetPeak, startPinger } from '../e2e/corpus_media.mjs';

const SCANS = Number(process.argv[2] || 30000);
const CHUNKS = Number(process.argv[3] || 400);
const SID = 'sess_benchmedia01';

async function attack(server, name, code) {
  const pid = server.transport.pid;
  const warm = sc(await callExec(server.client, { language: 'python', code: 'print(1)', session_id: SID }));
  if (warm.status !== 'success') throw new Error(JSON.stringify(warm));
  const reset = resetPeak(pid);
  const before = memoryMb(pid);
  const cpu0 = cpuSeconds(pid);
  const pinger = startPinger(server.client, { everyMs: 10 });
  const t0 = performance.now();
  const r = await callExec(server.client, { language: 'python', code, session_id: SID, timeout: 300 }, { timeoutMs: 3600000 });
  const wall = performance.now() - t0;
  const ping = await pinger.stop();
  const cpu = cpuSeconds(pid) - cpu0;
  const after = memoryMb(pid);
  const s = sc(r);
  const note = (r.content?.[0]?.text ?? '').split('\n').find((l) => l.includes('image of')) ?? '';
  return {
    name,
    status: s.status,
    bytes: Number((s.stdout ?? '').trim()),
    wallS: (wall / 1000).toFixed(1),
    maxGapMs: ping.maxGapMs.toFixed(0),
    pings: ping.pings,
    serverCpuS: cpu.toFixed(2),
    rssBeforeMb: before.rssMb.toFixed(1),
    peakMb: after.hwmMb.toFixed(1),
    peakAboveMb: (after.hwmMb - before.rssMb).toFixed(1),
    hwmReset: reset,
    note: note.slice(0, 200),
  };
}

const server = await startServer({ name: 'bench-attack-image', args: ['--http-listen', 'off', '--pool', 'off'] });
try {
  process.stdout.write(`server ${serverBinary()}\n`);
  const rows = [];
  rows.push(await attack(server, `jpeg ${SCANS} empty scans 2048x2048`, jpegScansCode({ side: 2048, scans: SCANS })));
  rows.push(await attack(server, `png ${CHUNKS} zTXt x 7.9 MB`, pngZtxtCode({ chunks: CHUNKS, inflated: 7_900_000 })));
  for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
  process.stdout.write('\nattack | image bytes | call s | longest ping gap ms (pings) | server CPU s | peak RSS MB (above start)\n');
  for (const r of rows)
    process.stdout.write(`${r.name} | ${r.bytes} | ${r.wallS} | ${r.maxGapMs} (${r.pings}) | ${r.serverCpuS} | ${r.peakMb} (+${r.peakAboveMb})\n`);
} finally {
  await server.close();
}
