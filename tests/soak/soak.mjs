#!/usr/bin/env node
// The soak (issue 30): N sessions x M cells of mixed work (print, display, stdin, files, raise,
// timeout, cancel; Python, JavaScript, bash) through every front end at once — MCP stdio (SDK
// v1), MCP Streamable HTTP at 2025-11-25 (SDK v1, some calls as tasks) and at 2026-07-28
// (raw JSON-RPC with per-request _meta, some calls as tasks), and a gateway notebook client
// (WebSocket) on a kernel an MCP client uses too — while seeded faults hit it (faults.mjs).
// Every cell prints a unique token; the invariants (invariants.mjs) are checked as it runs
// and after each phase. Exits 0 when none broke, 1 otherwise, printing the figures.
//
//   node tests/soak/soak.mjs [--seed 1] [--sessions 6] [--cells 6] [--minutes 0] [--phases 2]
//                            [--parallel 6] [--json FILE] [--prev-bin PATH]
// --cells is per session over the whole run (split across the phases); --minutes caps the
// run (0: none), each phase getting an equal share (cells not started in it are skipped);
// --parallel bounds the sessions that
// live at once per server; --prev-bin starts the stdio server as that (the previous release)
// until the first kill, so that the new one adopts its state dir and kept session. The binary:
// CELLGATE_BIN, else build/cellgate.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO_ROOT, serverBinary, sleep, startHttpServer, startServer } from '../e2e/lib.mjs';
import { FAULTS, runFault } from './faults.mjs';
import { Ledger, checkExeclog, checkPhaseEnd, resourceSample, stateFormat } from './invariants.mjs';
import { Rng, cellFor } from './work.mjs';
import { runGatewayPair, runLane, watchAnswers } from './lanes.mjs';

function parseArgs(argv) {
  const o = { seed: 1, sessions: 6, cells: 6, minutes: 0, phases: 2, parallel: 6, json: null, 'prev-bin': null };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in o) || argv[i + 1] === undefined) throw new Error(`usage: soak.mjs [--seed N] [--sessions N] [--cells N] [--minutes N] [--phases N] [--parallel N] [--json FILE] [--prev-bin PATH]; bad: ${argv[i]}`);
    o[key] = ['json', 'prev-bin'].includes(key) ? argv[i + 1] : Number(argv[i + 1]);
  }
  return o;
}

// The servers' settings: small sandboxes, so that an OOM and a full workspace come fast, and
// the kernels dir named (a build's default is its source tree's: a --prev-bin built elsewhere
// would have other settings, and the new server would rightly not adopt its sandboxes).
const SANDBOX_ARGS = ['--kernels-dir', path.join(REPO_ROOT, 'kernels'), '--memory-mb', '256', '--workspace-mb', '64', '--max-sessions', '40', '--idle-ttl', '3600'];
const GATEWAY_TOKEN = crypto.randomBytes(16).toString('hex');

/** The stdio server (S1, --keep-sessions on) on a state dir it keeps across SIGKILL and restarts. */
async function startStdio(ctx, extra = []) {
  // --prev-bin: the first server is the previous release; every restart runs this one.
  const bin = process.env.CELLGATE_BIN;
  if (ctx.opts['prev-bin'] && !ctx.s1) process.env.CELLGATE_BIN = ctx.opts['prev-bin'];
  let s;
  try {
    s = await startServer({ stateDir: ctx.stdioState, args: ['--keep-sessions', 'on', '--http-listen', 'off', ...SANDBOX_ARGS, ...extra], name: 'soak-stdio' });
  } finally {
    if (bin === undefined) delete process.env.CELLGATE_BIN; else process.env.CELLGATE_BIN = bin;
  }
  const proc = s.transport._process;
  watchAnswers(ctx, s.client);
  const server = { kind: 'stdio', ...s, pid: s.transport.pid, killing: false, epoch: (ctx.s1?.epoch ?? 0) + 1 };
  proc.on('exit', (code, signal) => {
    if (!server.killing) ctx.ledger.fail('crash', `the stdio server ended by itself: code ${code} signal ${signal}\n${s.stderrText().slice(-3000)}`);
  });
  return server;
}

async function startHttp(ctx) {
  const s = await startHttpServer({ args: ['--gateway-token', GATEWAY_TOKEN, ...SANDBOX_ARGS] });
  const server = { kind: 'http', ...s, pid: s.proc.pid, killing: false, token: GATEWAY_TOKEN };
  s.proc.on('exit', (code, signal) => {
    if (!server.killing) ctx.ledger.fail('crash', `the HTTP server ended by itself: code ${code} signal ${signal}\n${s.stderrText().slice(-3000)}`);
  });
  return server;
}

/**
 * Runs one phase: the lanes (sessions, PARALLEL at a time), the gateway pair and the phase's
 * faults. With --minutes the phase has its share of the time left (its lanes stop starting
 * cells at its end) and its faults come at seeded times in it; else at seeded shares of its cells.
 */
async function runPhase(ctx, phase, faults) {
  const { opts, rng } = ctx;
  const perSession = Math.max(1, Math.round(opts.cells / opts.phases));
  const queue = Array.from({ length: opts.sessions }, (_, i) => i);
  const total = opts.sessions * perSession;
  const startDone = ctx.ledger.cellsDone;
  const t0 = Date.now();
  const phaseEnd = ctx.deadline ? t0 + (ctx.deadline - t0) / (opts.phases - phase + 1) : 0;
  ctx.phaseDeadline = phaseEnd;
  const marks = faults.map(() => rng.next() * 0.8).sort((a, b) => a - b);
  const reached = (m) => (phaseEnd ? Date.now() - t0 >= m * (phaseEnd - t0) : ctx.ledger.cellsDone - startDone >= Math.floor(m * total));
  let lanesDone = false;
  const faultLoop = (async () => {
    for (let f = 0; f < faults.length; f++) {
      while (!lanesDone && !reached(marks[f])) await sleep(100);
      await runFault(ctx, faults[f], phase);
    }
  })();
  const lanes = [];
  for (let l = 0; l < Math.min(opts.parallel, opts.sessions); l++) {
    lanes.push((async () => {
      while (queue.length && !(phaseEnd && Date.now() > phaseEnd)) await runLane(ctx, phase, queue.shift(), perSession);
    })());
  }
  const gateway = runGatewayPair(ctx, phase, Math.max(2, Math.round(perSession / 2)));
  await Promise.all(lanes);
  await gateway;
  lanesDone = true;
  await faultLoop;
  await checkPhaseEnd(ctx, `phase ${phase}`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const rng = new Rng(opts.seed);
  const ledger = new Ledger();
  const ctx = { opts, rng, ledger, cellFor, stdioState: fs.mkdtempSync(path.join(os.tmpdir(), 'cg-soak-stdio-')),
    deadline: opts.minutes > 0 ? Date.now() + opts.minutes * 60000 : 0, samples: [], pings: [], baseline: {} };
  const started = Date.now();
  // Interrupted: the servers stop (the stdio one with its kept sessions, as at any stop).
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      for (const server of [ctx.s1, ctx.s2].filter(Boolean)) {
        server.killing = true;
        await server.close().catch(() => {});
      }
      process.exit(130);
    });
  }
  process.stderr.write(`soak: ${serverBinary()} seed ${opts.seed}, ${opts.sessions} sessions x ${opts.cells} cells, ${opts.phases} phases\n`);
  ctx.s1 = await startStdio(ctx);
  ctx.s2 = await startHttp(ctx);
  ctx.restartStdio = (extra) => startStdio(ctx, extra);
  const sampler = setInterval(() => ctx.samples.push({ t: Date.now() - started, s1: resourceSample(ctx.s1.pid), s2: resourceSample(ctx.s2.pid) }), 2000);
  const pinger = startPinger(ctx);
  try {
    // Phase 0: one call per front end, then the baseline everything returns to.
    await runLane(ctx, 0, 0, 1);
    await runLane(ctx, 0, 1, 1);
    await runLane(ctx, 0, 2, 1);
    await checkPhaseEnd(ctx, 'warm-up', { baseline: true });
    // Every fault type at least once, in a seeded order, spread over the phases.
    // Each phase takes the next share of the shuffled list, cycling: with fewer phases than
    // faults every phase has several, with more the list comes round again.
    const order = rng.shuffle([...FAULTS]);
    const each = Math.ceil(order.length / opts.phases);
    for (let p = 1; p <= opts.phases; p++) {
      const mine = Array.from({ length: each }, (_, k) => order[((p - 1) * each + k) % order.length]);
      await runPhase(ctx, p, mine);
    }
    await checkExeclog(ctx, ctx.s1, 'end');
    await checkExeclog(ctx, ctx.s2, 'end');
  } catch (err) {
    ledger.fail('driver', err.stack ?? String(err));
  } finally {
    clearInterval(sampler);
    pinger.stop();
    ctx.s1.killing = ctx.s2.killing = true;
    await ctx.s1.close().catch(() => {});
    await ctx.s2.close().catch(() => {});
    await checkPhaseEnd(ctx, 'after stop', { stopped: true }).catch((err) => ledger.fail('driver', err.stack));
  }
  ctx.format = stateFormat(ctx.stdioState);
  fs.rmSync(ctx.stdioState, { recursive: true, force: true });
  const report = ledger.report(ctx, Date.now() - started);
  process.stdout.write(report.text);
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(report.figures, null, 1));
  process.exit(ledger.failures.length ? 1 : 0);
}

/** Pings the HTTP server's gateway (GET /api) every 250 ms: the loop's answer time, a stall when none in 30 s. */
function startPinger(ctx) {
  let stopped = false;
  (async () => {
    while (!stopped) {
      const s2 = ctx.s2;
      const t0 = performance.now();
      try {
        const res = await fetch(`${s2.origin}/api`, { headers: { Authorization: `token ${s2.token}` }, signal: AbortSignal.timeout(30000) });
        await res.arrayBuffer();
        ctx.pings.push(performance.now() - t0);
      } catch (err) {
        if (!stopped && !s2.killing) ctx.ledger.fail('stall', `the HTTP server did not answer a ping: ${err.message}`);
      }
      await sleep(250);
    }
  })();
  return { stop: () => { stopped = true; } };
}

await main();
