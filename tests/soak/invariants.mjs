// The soak's invariants: the ledger of calls (one answer or a logged reason each, no foreign
// token, the expected outcome where no fault was near), the execution log (one line per run,
// its SQLite index equal to its lines), and what the servers hold and leave (RSS, fds,
// threads; containers, processes, cgroups, mounts, loop devices, dirs) after each phase.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { leftovers, listDir } from '../e2e/leftovers.mjs';
import { sleep } from '../e2e/lib.mjs';
import { TOKEN_RE } from './work.mjs';

const NEAR_FAULT_MS = 5000; // a call this close to a fault on its server may fail in any way, if answered
const FD_SLACK = 4;
const THREAD_SLACK = 2;

const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);
const round = (x) => (x === null ? null : Math.round(x));

export class Ledger {
  constructor() {
    this.calls = [];
    this.faults = [];
    this.kills = []; // {server, at}: the server SIGKILLed
    this.failures = [];
    this.cellsDone = 0;
    this.strayAnswers = 0; // SDK answers for no pending request (lanes.mjs watchAnswers)
  }

  fail(kind, message) {
    this.failures.push({ kind, message });
    process.stderr.write(`soak: FAIL ${kind}: ${message.slice(0, 3000)}\n`);
  }

  begin(meta) {
    const rec = { ...meta, t0: Date.now(), t1: null, answers: 0, outcome: null };
    this.calls.push(rec);
    return rec;
  }

  nearFault(rec) {
    return this.faults.some((f) => (f.server === rec.server || f.server === 'both')
      && f.t0 - 1000 <= (rec.t1 ?? Date.now()) && (f.t1 ?? Date.now()) + NEAR_FAULT_MS >= rec.t0);
  }

  /** An answer to REC: RESULT (a CallToolResult, or null with opts.error), opts.busy: session_busy. */
  answer(rec, result, { busy = false, error = null, refused = false } = {}) {
    rec.t1 = Date.now();
    if (++rec.answers > 1) this.fail('answers', `${rec.token}: a second answer`);
    rec.outcome = refused ? 'refused' : busy ? 'busy' : error ? 'rpc_error' : 'answered';
    const s = result?.structuredContent ?? {};
    rec.status = s.status;
    rec.executionId = s.execution_id;
    const text = JSON.stringify(result ?? '');
    const foreign = [...new Set(text.match(TOKEN_RE) ?? [])].filter((t) => t !== rec.token);
    if (foreign.length) this.fail('mixed', `${rec.front} ${rec.session} ${rec.token}: foreign tokens ${foreign.join(', ')} in ${text.slice(0, 1500)}`);
    if (busy || refused || this.nearFault(rec)) return;
    if (error) {
      this.fail('wrong', `${rec.front} ${rec.session} ${rec.token} (${rec.kind}): a JSON-RPC error: ${error}`);
      return;
    }
    const want = { success: 'success', error: 'execution_error', timeout: 'timeout' }[rec.expect];
    const shows = rec.expect === 'timeout' || text.includes(rec.token);
    if (want && (s.status !== want || !shows))
      this.fail('wrong', `${rec.front} ${rec.session} ${rec.lang} ${rec.kind}: expected ${want} with ${rec.token}, got ${text.slice(0, 1500)}`);
    if (rec.kind === 'display' && !(s.outputs ?? []).some((o) => o.mime_type === 'image/png' || o.data?.['image/png']))
      this.fail('wrong', `${rec.token}: no image among the outputs: ${text.slice(0, 1500)}`);
  }

  /** REC got no answer: REASON; ALLOWED when a fault or the client's own cancel explains it. */
  noAnswer(rec, reason, allowed) {
    rec.t1 = Date.now();
    rec.outcome = allowed ? (/killed/.test(reason) ? 'severed' : 'cancelled') : 'lost';
    rec.reason = reason;
    if (!allowed) this.fail('lost', `${rec.front} ${rec.session} ${rec.token} (${rec.kind}${rec.task ? ', task' : ''}): no answer: ${reason}`);
  }

  report(ctx, ms) {
    const by = (o) => this.calls.filter((c) => c.outcome === o).length;
    const times = this.calls.filter((c) => c.outcome === 'answered').map((c) => c.t1 - c.t0).sort((a, b) => a - b);
    const pings = [...ctx.pings].sort((a, b) => a - b);
    const faults = {};
    for (const f of this.faults) faults[f.type] = (faults[f.type] ?? 0) + (f.injected ? 1 : 0);
    const curve = (k) => ctx.samples.filter((s) => s[k]).map((s) => ({ t: Math.round(s.t / 1000), rss_mb: Math.round(s[k].rss / 1024), fds: s[k].fds, threads: s[k].threads }));
    const figures = {
      seconds: Math.round(ms / 1000), calls: this.calls.length, answered: by('answered'), busy: by('busy'), task_refused: by('refused'), rpc_errors: by('rpc_error'),
      cancelled: by('cancelled'), severed_by_kill: by('severed'), lost: by('lost'), stray_answers: this.strayAnswers,
      mixed: this.failures.filter((f) => f.kind === 'mixed').length, wrong: this.failures.filter((f) => f.kind === 'wrong').length,
      by_front: Object.fromEntries(['stdio', 'http1', 'modern', 'gateway'].map((f) => [f, this.calls.filter((c) => c.front === f).length])),
      by_language: Object.fromEntries([...new Set(this.calls.map((c) => c.lang).filter(Boolean))].sort().map((l) => [l, this.calls.filter((c) => c.lang === l).length])),
      tasks: this.calls.filter((c) => c.task).length, faults,
      answer_ms: { p50: pct(times, 50), p90: pct(times, 90), p99: pct(times, 99), max: times.at(-1) ?? null },
      ping_ms: { n: pings.length, p50: round(pct(pings, 50)), p99: round(pct(pings, 99)), max: round(pings.at(-1) ?? null) },
      phase_ends: ctx.phaseMarks ?? [], execlog: ctx.execlog ?? {}, state_format: ctx.format,
      curve_stdio: curve('s1'), curve_http: curve('s2'), failures: this.failures,
    };
    const line = (c) => c.map((p) => `${p.t}s:${p.rss_mb}MB/${p.fds}fd/${p.threads}th`).join(' ');
    const text = [
      `soak: ${figures.seconds} s, ${figures.calls} calls (${JSON.stringify(figures.by_front)}, ${figures.tasks} as tasks; by language ${JSON.stringify(figures.by_language)})`,
      `  answered ${figures.answered}, busy ${figures.busy}, tasks refused at the cap ${figures.task_refused}, JSON-RPC errors ${figures.rpc_errors}, cancelled ${figures.cancelled}, severed by a server kill ${figures.severed_by_kill}, stray (late or second) answers ${figures.stray_answers}, LOST ${figures.lost}, MIXED ${figures.mixed}, wrong ${figures.wrong}`,
      `  faults injected: ${JSON.stringify(faults)}`,
      `  answer ms: ${JSON.stringify(figures.answer_ms)}; loop ping ms: ${JSON.stringify(figures.ping_ms)}`,
      `  phase ends: ${JSON.stringify(figures.phase_ends)}`,
      `  execution log: ${JSON.stringify(figures.execlog)}`,
      `  state dir format: ${JSON.stringify(figures.state_format)}`,
      `  stdio server (rss/fds/threads): ${line(figures.curve_stdio.filter((_, i, a) => i % Math.ceil(a.length / 12 || 1) === 0))}`,
      `  http server  (rss/fds/threads): ${line(figures.curve_http.filter((_, i, a) => i % Math.ceil(a.length / 12 || 1) === 0))}`,
      `  failures: ${this.failures.length}${this.failures.length ? '\n    ' + this.failures.map((f) => `${f.kind}: ${f.message.slice(0, 400)}`).join('\n    ') : ''}`,
      '',
    ].join('\n');
    return { figures, text };
  }
}

/** The server process PID's RSS (kB), open fds and threads, or null when it is gone. */
export function resourceSample(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return { rss: Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0), threads: Number(status.match(/Threads:\s+(\d+)/)?.[1] ?? 0),
      fds: fs.readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return null;
  }
}

const EMPTY = JSON.stringify({ containers: [], processes: [], cgroups: [], mounts: [], dirs: [] });

/** Waits (up to 60 s) until nothing of SERVER's instances is left beyond what it runs; fails with what is. */
async function checkLeftovers(ctx, server, label, live) {
  const state = server.kind === 'stdio' ? ctx.stdioState : server.stateDir;
  const instances = live ? listDir(path.join(state, 'instances')) : (ctx.instances?.[server.kind] ?? []);
  ctx.instances = { ...ctx.instances, [server.kind]: instances };
  for (const instance of instances) {
    let found;
    for (let i = 0; i < 240; i++) {
      found = leftovers(state, instance, { live });
      if (JSON.stringify(found) === EMPTY) break;
      await sleep(250);
    }
    if (JSON.stringify(found) !== EMPTY) ctx.ledger.fail('leak', `${label}: ${server.kind} instance ${instance} left ${JSON.stringify(found)}`);
  }
}

/**
 * After a phase (every session closed): nothing of either server is left but what it runs,
 * its fds and threads are back to the baseline (taken when opts.baseline, or first seen after
 * a restart), and the execution logs hold. opts.stopped: both servers were stopped.
 */
export async function checkPhaseEnd(ctx, label, { baseline = false, stopped = false } = {}) {
  const mark = { label };
  for (const server of [ctx.s1, ctx.s2]) {
    await checkLeftovers(ctx, server, label, !stopped);
    if (stopped) continue;
    await sleep(500);
    const now = resourceSample(server.pid);
    const base = ctx.baseline[server.kind];
    if (baseline || !base || base.pid !== server.pid) ctx.baseline[server.kind] = { ...now, pid: server.pid };
    else if (now.fds > base.fds + FD_SLACK || now.threads > base.threads + THREAD_SLACK)
      ctx.ledger.fail('leak', `${label}: the ${server.kind} server holds ${now.fds} fds and ${now.threads} threads, ${base.fds} and ${base.threads} at its baseline`);
    mark[server.kind] = { rss_mb: Math.round(now.rss / 1024), fds: now.fds, threads: now.threads };
    await checkExeclog(ctx, server, label);
  }
  ctx.phaseMarks = [...(ctx.phaseMarks ?? []), mark];
}

/** The execution log's JSON lines (every day file) and its index's execution ids. */
function readExeclog(dir) {
  const lines = [];
  let partial = 0;
  for (const name of listDir(dir).filter((n) => /^executions-.*\.jsonl$/.test(n)).sort()) {
    for (const text of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (!text) continue;
      try { lines.push(JSON.parse(text)); } catch { partial++; }
    }
  }
  let indexed = [];
  if (fs.existsSync(path.join(dir, 'index.sqlite')))
    indexed = execFileSync('sqlite3', ['-readonly', path.join(dir, 'index.sqlite'), 'SELECT execution_id FROM executions'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return { lines, partial, indexed };
}

/**
 * SERVER's execution log: every line parses, no execution twice, the index holds exactly the
 * lines' ids (waiting up to 10 s for the log's worker), and every answered call's
 * execution_id is in it once.
 */
export async function checkExeclog(ctx, server, label) {
  const dir = path.join(server.kind === 'stdio' ? ctx.stdioState : server.stateDir, 'logs');
  let log;
  let ids;
  for (let i = 0; i < 40; i++) {
    log = readExeclog(dir);
    ids = log.lines.map((l) => l.execution_id);
    const a = [...new Set(ids)].sort().join(',');
    const b = [...new Set(log.indexed)].sort().join(',');
    if (a === b && log.indexed.length === new Set(log.indexed).size) break;
    await sleep(250);
  }
  const lineSet = new Set(ids);
  const indexSet = new Set(log.indexed);
  const notIndexed = ids.filter((id) => !indexSet.has(id));
  const notLines = log.indexed.filter((id) => !lineSet.has(id));
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (log.partial) ctx.ledger.fail('execlog', `${label}: ${server.kind}: ${log.partial} lines that do not parse`);
  if (notIndexed.length || notLines.length) ctx.ledger.fail('execlog', `${label}: ${server.kind}: index != lines: not indexed ${notIndexed.join(',')}; indexed, no line ${notLines.join(',')}`);
  if (twice.length) ctx.ledger.fail('execlog', `${label}: ${server.kind}: logged twice: ${twice.join(',')}`);
  const answered = ctx.ledger.calls.filter((c) => c.server === server.kind && c.outcome === 'answered' && c.executionId);
  // A run's answer waits for its line (docs/operations.md, the write policy): even across a
  // SIGKILL, every answered run is in the log.
  const missing = answered.filter((c) => !lineSet.has(c.executionId)).map((c) => `${c.executionId} (${c.token})`);
  if (missing.length) ctx.ledger.fail('execlog', `${label}: ${server.kind}: answered runs not in the log: ${missing.join(', ')}`);
  ctx.execlog = { ...ctx.execlog, [server.kind]: { lines: ids.length, indexed: log.indexed.length, answered_runs: answered.length,
    answered_not_logged: missing.length } };
}

/** What the state dir says of its format: its top-level names and its format file (<state dir>/format). */
export function stateFormat(state) {
  const names = listDir(state);
  let format = null;
  try { format = fs.readFileSync(path.join(state, 'format'), 'utf8').trim(); } catch { /* none */ }
  return { names, format: format ?? 'none: the state dir has no format file' };
}
