// Shared checks for the hostile corpus (tests/e2e/corpus_*.test.mjs): a server with a
// canary secret in its environment, the server's own memory, a second session that must stay
// responsive after every group, and one table line per case (case | expected | observed).

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { after, test } from 'node:test';

import { callExec, sc, show, startServer } from './lib.mjs';

export const CANARY_NAME = 'CELLGATE_CORPUS_CANARY';
export const CANARY_VALUE = `canary-${randomBytes(12).toString('hex')}`;
/** The server's memory bound under any flood (issue 9, point 4). */
export const RSS_BOUND_MB = 64;

/**
 * Starts `cellgate mcp` (lib.mjs's startServer) with CANARY_NAME=CANARY_VALUE in the server's
 * environment and the given extra arguments/env. Returns the lib.mjs server plus
 * { pid, memory(), call(name, args, timeoutMs?) }.
 */
export async function startCorpusServer({ args = [], env = {}, name = 'corpus' } = {}) {
  assert.equal(process.env[CANARY_NAME], undefined, `unset ${CANARY_NAME} in the test's own env`);
  const server = await startServer({ name, args, env: { [CANARY_NAME]: CANARY_VALUE, ...env } });
  server.pid = server.transport.pid;
  assert.ok(server.pid > 0, 'the SDK transport knows the server pid');
  server.memory = () => serverMemory(server.pid);
  server.call = (tool, toolArgs, timeoutMs = 180000) =>
    server.client.callTool({ name: tool, arguments: toolArgs }, undefined, { timeout: timeoutMs });
  return server;
}

/** Returns { rssMb, hwmMb } of a process from /proc/<pid>/status (VmRSS, VmHWM). */
export function serverMemory(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/**
 * Samples the server's VmRSS every `everyMs` until stop() is called; stop() returns
 * { startRssMb, peakRssMb, hwmMb } (VmHWM covers peaks between samples).
 */
export function watchMemory(server, everyMs = 100) {
  // Writing 5 to clear_refs resets VmHWM to the current RSS (root only), so the peak is this
  // call's own; without it VmHWM is the peak since the server started.
  try {
    fs.writeFileSync(`/proc/${server.pid}/clear_refs`, '5');
  } catch {
    // not permitted: VmHWM stays cumulative
  }
  let peak = 0;
  let startRss = NaN;
  try {
    startRss = serverMemory(server.pid).rssMb;
  } catch {
    // gone
  }
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, server.memory().rssMb);
    } catch {
      // the server is gone; the caller's checks say so
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      let hwm = NaN;
      try {
        const m = server.memory();
        peak = Math.max(peak, m.rssMb);
        hwm = m.hwmMb;
      } catch {
        // gone
      }
      return { startRssMb: startRss, peakRssMb: peak, hwmMb: hwm };
    },
  };
}

/**
 * The second session: `x = 0` once, then each check() runs `x += 1; x` there and asserts the
 * right count, and pings the server. Proves the server and another sandbox still serve.
 */
export function secondSession(server, sid = 'sess_corpusbystand') {
  let count = null;
  return {
    sid,
    async check(label = '') {
      await server.client.ping({ timeout: 15000 });
      if (count === null) {
        const r = await callExec(server.client, { language: 'python', code: 'x = 0', session_id: sid });
        assert.equal(sc(r).status, 'success', `second session did not start ${label}: ${show(r, server)}`);
        count = 0;
      }
      const r = await callExec(server.client, { language: 'python', code: 'x += 1\nx', session_id: sid }, { timeoutMs: 60000 });
      count += 1;
      assert.equal(sc(r).status, 'success', `second session unresponsive ${label}: ${show(r, server)}`);
      assert.equal(String(sc(r).returnValue), String(count), `second session lost its state ${label}: ${show(r, server)}`);
      return `x=${count}`;
    },
  };
}

/** Runs code and returns the parsed JSON of the last stdout line (status must be success). */
export async function runJson(server, args, { timeoutMs } = {}) {
  const r = await callExec(server.client, { language: 'python', ...args }, { timeoutMs });
  const s = sc(r);
  assert.equal(s.status, 'success', `probe did not run: ${show(r, server)}`);
  const last = s.stdout.trim().split('\n').at(-1);
  try {
    return JSON.parse(last);
  } catch {
    assert.fail(`probe did not print JSON last: ${show(r, server)}`);
  }
}

/** A JSON literal usable as a Python literal (strings, numbers, lists, dicts of those). */
export const py = (value) => JSON.stringify(value);

/**
 * One table per test file. kase(name, expected, fn) registers a node:test case; fn returns the
 * observed text (or throws: the case fails and the first line of the error is the observation).
 * At the end the file prints `case | expected | observed | PASS/FAIL` lines.
 */
export function caseTable(file) {
  const rows = [];
  const started = Date.now();
  after(() => {
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const lines = rows.map((r) => `${r.ok ? 'PASS' : 'FAIL'} | ${r.name} | ${r.expected} | ${r.observed}`);
    process.stdout.write(`\n=== ${file}: case | expected | observed (${secs} s) ===\n${lines.join('\n')}\n`);
  });
  const kase = function kase(name, expected, fn, opts = {}) {
    test(name, opts, async (t) => {
      const t0 = Date.now();
      try {
        const observed = await fn(t);
        rows.push({ name, expected, observed: `${observed ?? 'as expected'} [${((Date.now() - t0) / 1000).toFixed(1)} s]`, ok: true });
      } catch (err) {
        const first = String(err?.message ?? err).split('\n')[0].slice(0, 300);
        rows.push({ name, expected, observed: `${first} [${((Date.now() - t0) / 1000).toFixed(1)} s]`, ok: false });
        throw err;
      }
    });
  };
  /** A case for a finding still open: it runs and is reported, and REASON says why it
      may fail (node:test's todo: a failure does not fail the file). */
  kase.todo = (reason, name, expected, fn) => kase(name, expected, fn, { todo: reason });
  return kase;
}

/** This machine's own addresses: loopback plus every interface address (never any other host). */
export function ownAddresses() {
  const found = [{ address: '127.0.0.1', family: 4 }];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      if (a.family === 'IPv6' && a.scopeid) continue; // link-local needs a scope id; the global ones prove the same
      found.push({ address: a.address, family: a.family === 'IPv6' ? 6 : 4 });
    }
  }
  return found;
}

/**
 * Opens a TCP listener on each of this machine's own addresses (and ::1 when it exists).
 * Returns { targets: [[host, port]], accepted(): number, close() }.
 */
export async function ownListeners() {
  let accepted = 0;
  const servers = [];
  const targets = [];
  const addrs = ownAddresses();
  addrs.push({ address: '::1', family: 6 });
  for (const { address } of addrs) {
    const srv = net.createServer((sock) => {
      accepted++;
      sock.destroy();
    });
    try {
      await new Promise((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, address, resolve);
      });
    } catch {
      continue; // e.g. no ::1 on this host
    }
    servers.push(srv);
    targets.push([address, srv.address().port]);
  }
  return {
    targets,
    accepted: () => accepted,
    close: () => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))),
  };
}

/** Finds pids of processes whose command line contains every given string (from /proc). */
export function pidsWithCmdline(...parts) {
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    if (parts.every((p) => cmd.includes(p))) found.push(Number(name));
  }
  return found;
}
