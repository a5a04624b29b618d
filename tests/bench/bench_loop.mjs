// A main loop that never stalls (issue 29, point 2): the longest and p99 ping stall of a
// client that pings every 10 ms while other requests run the heavy operations at full tilt,
// for two server binaries in the same run (the base first, then this build).
//
// Each server (Streamable HTTP, the official MCP SDK client) gets: an execution log of
// LOG_ENTRIES runs of 2 KB output (default 20,000; written as the log's own lines and
// indexed once), a script library of SCRIPTS scripts (default 2,000, made once by
// tests/bench_scripts of CELLGATE_BIN's build and copied), a session with CELLS cells (default 300, 2 KB of output each)
// and a 64 MB file in its workspace. Then, for LOAD_S seconds (default 20), these run
// concurrently, each in its own loop, one request at a time:
//   search_execution_logs (a two-letter query, which scans every run's text, then a word)
//   and get_execution_log; save_script and search_scripts; export_notebook of the session;
//   list_scripts; read_artifact of a 700 KB file; upload_file of 8 MB; resources/list;
//   resources/read of the 700 KB file; a download of the 64 MB file over HTTP.
// Meanwhile a pinger in a process of its own (so that the load's JSON work in this one does
// not delay it), with its own MCP client, sends an MCP ping every 10 ms (the next one 10 ms
// after the answer) and a gateway GET /api every 10 ms. Printed per server: the longest,
// p99 and p50 answer times of each, the pings, and how many of each operation completed.
// The floor: a second, idle server of the same binary, pinged the same way by a pinger of
// its own at the same time: what this machine's load alone does to a loop that has nothing
// to do (on 2 cores the load's own client competes for the CPU).
//
//   node tests/bench/bench_loop.mjs [load_s=20] [log_entries=20000] [scripts=2000] [cells=300]
//   BASE_BIN=/work/helpers/cellgate-base CELLGATE_BIN=build/cellgate node tests/bench/bench_loop.mjs
//   ONLY=search_logs,... restricts the load to the named operations (to find which stalls);
//   BASE_BIN=none measures this build alone.
//
// Not part of the test command: a benchmark, not a pass/fail check.

import { execFileSync, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createRequire } from 'node:module';

import { REPO_ROOT, startHttpServer } from '../e2e/lib.mjs';

// The SDK, from tests/e2e's node_modules.
const sdk = createRequire(new URL('../e2e/lib.mjs', import.meta.url));
const { Client } = await import(sdk.resolve('@modelcontextprotocol/sdk/client/index.js'));
const { StreamableHTTPClientTransport } = await import(sdk.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'));

const LOAD_S = Number(process.argv[2] || 20);
const LOG_ENTRIES = Number(process.argv[3] || 20000);
const SCRIPTS = Number(process.argv[4] || 2000);
const CELLS = Number(process.argv[5] || 300);
const BASE_BIN = process.env.BASE_BIN || '/work/helpers/cellgate-base';
const MINE_BIN = process.env.CELLGATE_BIN || path.join(REPO_ROOT, 'build', 'cellgate');
const ONLY = process.env.ONLY ? process.env.ONLY.split(',') : null;

const call = (client, name, args, timeout = 600000) =>
  client.callTool({ name, arguments: args }, undefined, { timeout });

// The execution log's lines for LOG_ENTRIES runs of the stdio client, spread over today.
function seedLog(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const day = new Date().toISOString().slice(0, 10);
  const out = fs.openSync(path.join(dir, `executions-${day}.jsonl`), 'w');
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  let chunk = '';
  for (let i = 0; i < LOG_ENTRIES; i++) {
    const failed = i % 7 === 0;
    const t = new Date(Date.parse(`${day}T00:00:00Z`) + (i % 86400) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    chunk += `${JSON.stringify({
      execution_id: `exec_b${String(i).padStart(11, '0')}`,
      client_id: 'stdio', session_id: null, language: 'python',
      status: failed ? 'failed' : 'success', exit_code: failed ? 1 : 0, duration_ms: 3,
      executed_at: t, tool: 'execute_code', front_end: 'mcp',
      code: `rows = load("${words[i % 8]}-${i}")\nprint(summary(rows, marker=${i}))`,
      stdout: `${words[(i * 3) % 8]} batch ${i}: ${'x'.repeat(2000)}\n`,
      stderr: failed ? `Traceback: ValueError ${words[i % 8]}\n` : '',
    })}\n`;
    if (chunk.length > 1 << 20) { fs.writeSync(out, chunk); chunk = ''; }
  }
  fs.writeSync(out, chunk);
  fs.closeSync(out);
}

function startPinger(send, everyMs = 10) {
  let stopped = false;
  const latencies = [];
  let maxGap = 0;
  let last = performance.now();
  let errors = 0;
  const loop = (async () => {
    while (!stopped) {
      const t0 = performance.now();
      try { await send(); } catch { errors += 1; }
      const now = performance.now();
      latencies.push(now - t0);
      maxGap = Math.max(maxGap, now - last);
      last = now;
      const wait = everyMs - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      latencies.sort((a, b) => a - b);
      const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
      return { n: latencies.length, max: latencies.at(-1) ?? 0, p99: p(0.99), p50: p(0.5), maxGap, errors };
    },
  };
}

// The pinger's process: `bench_loop.mjs --pinger ORIGIN`; pings until told "stop", then
// sends its figures back.
async function pinger(origin) {
  const client = new Client({ name: 'bench-loop-pinger', version: '0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${origin}/mcp`)));
  const mcp = startPinger(() => client.ping({ timeout: 600000 }));
  const api = startPinger(async () => { const r = await fetch(`${origin}/api`); await r.text(); });
  process.send({ ready: true });
  process.on('message', async () => {
    const figures = { mcp: await mcp.stop(), api: await api.stop() };
    process.send(figures);
    await client.close();
    process.exit(0);
  });
}

async function runServer(bin, label, fixtures) {
  process.env.CELLGATE_BIN = bin;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-loop-'));
  const logDir = path.join(work, 'logs');
  const scriptsDir = path.join(work, 'scripts');
  execFileSync('cp', ['-a', path.join(fixtures, 'logs'), logDir]);
  execFileSync('cp', ['-a', path.join(fixtures, 'scripts'), scriptsDir]);
  const t0 = performance.now();
  const server = await startHttpServer({ args: ['--log-dir', logDir, '--scripts-dir', scriptsDir, '--pool', 'off', '--log-level', 'debug'] });
  // The server's own account: each loop callback over 20 ms (cg_loop, debug level), kept
  // from the load's start.
  const held = [];
  const handlers = [];
  let counting = false;
  let partial = '';
  server.proc.stderr.on('data', (chunk) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      const m = counting && line.match(/event loop: a (\S+) callback held the loop ([0-9.]+) ms, ([0-9.-]+) ms of it on the CPU \((.*)\+(0x[0-9a-f]+)\)/);
      if (m) held.push({ kind: m[1], ms: Number(m[2]), cpu: Number(m[3]), file: m[4], offset: m[5] });
      const h = counting && line.match(/http: the handler of (\S+ \S+) held the loop ([0-9.]+) ms/);
      if (h) handlers.push({ request: h[1], ms: Number(h[2]) });
    }
  });
  const startS = (performance.now() - t0) / 1000;
  const { client: c } = await server.connect();
  const idle = await startHttpServer({ args: ['--pool', 'off'] });
  try {
    // The session: CELLS cells with output, a 64 MB file, a 700 KB one.
    const SID = (await call(c, 'start_session', { language: 'python' })).structuredContent.session_id;
    for (let i = 0; i < CELLS; i++)
      await call(c, 'execute_code', { language: 'python', session_id: SID, code: `print("cell ${i} " + "y" * 2000)` });
    await call(c, 'execute_code', {
      language: 'python', session_id: SID,
      code: 'open("big.bin","wb").write(b"z" * (64 << 20)); open("mid.bin","wb").write(b"m" * 700000)',
    });
    const big = (await call(c, 'read_artifact', { session_id: SID, path: 'big.bin' })).structuredContent;
    const bigUrl = big.download_url;
    const upload = Buffer.alloc(8 << 20, 7).toString('base64');

    const counts = {};
    let stop = false;
    const ops = {
      search_logs: async (i) => {
        await call(c, 'search_execution_logs', i % 2 ? { query: 'batch', limit: 100 } : { query: 'zq' });
        await call(c, 'get_execution_log', { execution_id: `exec_b${String(i % LOG_ENTRIES).padStart(11, '0')}` });
      },
      scripts: async (i) => {
        await call(c, 'save_script', { name: `bench-loop-${i % 50}`, language: 'python', code: `print(${i})`, description: 'bench loop' });
        await call(c, 'search_scripts', { query: i % 2 ? 'quarterly' : 'merge csv' });
      },
      list_scripts: async () => { await call(c, 'list_scripts', {}); },
      export_notebook: async (i) => { await call(c, 'export_notebook', { session_id: SID, filename: `nb-${i % 4}.ipynb` }); },
      read_artifact: async () => { await call(c, 'read_artifact', { session_id: SID, path: 'mid.bin' }); },
      upload: async (i) => { await call(c, 'upload_file', { session_id: SID, filename: `up-${i % 2}.bin`, content_base64: upload, overwrite: true }); },
      resources_list: async () => { await c.listResources(); },
      resources_read: async () => { await c.readResource({ uri: `cellgate://sessions/${SID}/files/mid.bin` }); },
      download: async () => {
        if (!bigUrl) return;
        const r = await fetch(bigUrl);
        await r.arrayBuffer();
      },
    };
    const selected = Object.entries(ops).filter(([name]) => !ONLY || ONLY.includes(name));
    const child = fork(new URL(import.meta.url).pathname, ['--pinger', server.origin]);
    const fromChild = () => new Promise((resolve) => child.once('message', resolve));
    await fromChild();
    const idleChild = fork(new URL(import.meta.url).pathname, ['--pinger', idle.origin]);
    const fromIdle = () => new Promise((resolve) => idleChild.once('message', resolve));
    await fromIdle();
    counting = true;
    const loops = selected.map(([name, fn]) => (async () => {
      counts[name] = 0;
      for (let i = 0; !stop; i++) {
        try { await fn(i); counts[name] += 1; } catch (err) { counts[`${name}_errors`] = (counts[`${name}_errors`] ?? 0) + 1; if (!counts[`${name}_first_error`]) counts[`${name}_first_error`] = String(err.message).slice(0, 120); }
      }
    })());
    await new Promise((r) => setTimeout(r, LOAD_S * 1000));
    stop = true;
    child.send('stop');
    idleChild.send('stop');
    const { mcp: ping, api } = await fromChild();
    const { mcp: idlePing } = await fromIdle();
    await Promise.all(loops);
    counting = false;
    held.sort((a, b) => b.ms - a.ms);
    const where = (h) => {
      try { return execFileSync('addr2line', ['-f', '-s', '-e', h.file, h.offset], { encoding: 'utf8' }).trim().split('\n').join(' '); } catch { return h.offset; }
    };
    const slow = held.slice(0, 5).map((h) => `${h.ms} ms (CPU ${h.cpu}) ${h.kind} ${where(h)}`);
    handlers.sort((a, b) => b.ms - a.ms);
    const slowRequests = handlers.slice(0, 5).map((h) => `${h.ms} ms ${h.request}`);
    return { label, bin, startS, ping, api, idlePing, held: held.length, slow, slowRequests, counts, load: os.loadavg().map((x) => x.toFixed(2)).join(' ') };
  } finally {
    await server.close();
    await idle.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--pinger') {
  await pinger(process.argv[3]);
} else {
const fixtures = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-loop-fixtures-'));
seedLog(path.join(fixtures, 'logs'));
// The log's index, built once by a server that starts and ends at once (stdin closed).
const indexer = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-bench-loop-state-'));
execFileSync(MINE_BIN, ['mcp', '--state-dir', indexer, '--log-dir', path.join(fixtures, 'logs'), '--http-listen', 'off', '--pool', 'off'], { input: '', stdio: ['pipe', 'ignore', 'ignore'] });
fs.rmSync(indexer, { recursive: true, force: true });
// The library's maker is the build's beside its binary (build/tests/bench_scripts).
execFileSync(path.join(path.dirname(MINE_BIN), 'tests', 'bench_scripts'), [String(SCRIPTS), '1', path.join(fixtures, 'scripts')], { stdio: 'ignore' });
const rows = [];
try {
  for (const [label, bin] of [['base', BASE_BIN], ['this build', MINE_BIN]].filter(([, b]) => b !== 'none')) {
    const row = await runServer(bin, label, fixtures);
    rows.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  }
} finally {
  fs.rmSync(fixtures, { recursive: true, force: true });
}
const f = (x) => x.toFixed(1);
process.stdout.write(`\nload ${LOAD_S} s, log ${LOG_ENTRIES} runs, ${SCRIPTS} scripts, ${CELLS} cells${ONLY ? `, only ${ONLY}` : ''}\n`);
process.stdout.write('server | MCP ping: longest / p99 / p50 ms (pings) | GET /api: longest / p99 ms (gets) | idle peer\'s MCP ping meanwhile: longest / p99 / p50 ms | load average\n');
for (const r of rows)
  process.stdout.write(`${r.label} | ${f(r.ping.max)} / ${f(r.ping.p99)} / ${f(r.ping.p50)} (${r.ping.n}) | ${r.api ? `${f(r.api.max)} / ${f(r.api.p99)} (${r.api.n})` : '-'} | ${f(r.idlePing.max)} / ${f(r.idlePing.p99)} / ${f(r.idlePing.p50)} | ${r.load}\n`);
for (const r of rows)
  process.stdout.write(`${r.label}: longest MCP ping stall / the idle peer's: ${(r.ping.max / r.idlePing.max).toFixed(2)}; loop callbacks over 20 ms (the server's own log, wall time): ${r.held}${r.slow.length ? `, longest ${r.slow.join(', ')}` : ''}${r.slowRequests.length ? `; request handlers among them: ${r.slowRequests.join(', ')}` : ''}\n`);
if (rows.length === 2)
  process.stdout.write(`longest MCP ping stall, this build / base: ${(rows[1].ping.max / rows[0].ping.max).toFixed(2)}\n`);
}
