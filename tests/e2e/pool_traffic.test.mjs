// The warm pool under traffic (issue 29, point 4): /metrics counts each pooled language's
// hits and misses (a claim that found none ready and went cold), its target size and its
// ready and warming sandboxes; a burst larger than the ready pool shows misses, and once
// the pool has refilled the next call is a hit; the pool refills while a user call runs
// (a session's cell that stays in flight until the test has seen the refill in /metrics);
// a sandbox warmed beside a user call has a low CPU weight (its cgroup's cpu.shares /
// cpu.weight), and the claim gives it the full weight. No timing assertion: the waits are guards.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { callExec, expectStatus, sleep, startServer } from './lib.mjs';

const ARGS = ['--http-listen', '127.0.0.1:0', '--log-level', 'debug', '--workspace-mb', '0', '--pool-preload', 'none'];

async function metrics(server) {
  const port = server.stderrText().match(/listening on http:\/\/[^:]+:(\d+)/)?.[1];
  assert.ok(port, server.stderrText().slice(-2000));
  const admin = fs.readFileSync(path.join(server.stateDir, 'admin-token'), 'utf8').trim();
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${admin}` } });
  assert.equal(res.status, 200, 'GET /metrics');
  return res.text();
}

// The python sample of NAME (with LABELS after the language), or undefined.
function pySample(text, name, labels = '') {
  const key = `${name}{language="python"${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(key));
  return line === undefined ? undefined : Number(line.slice(key.length));
}

function pool(text) {
  const p = {
    hits: pySample(text, 'cellgate_pool_hits_total'),
    misses: pySample(text, 'cellgate_pool_misses_total'),
    target: pySample(text, 'cellgate_pool_target_sandboxes'),
    ready: pySample(text, 'cellgate_pool_sandboxes_by_language', ',state="ready"'),
    warming: pySample(text, 'cellgate_pool_sandboxes_by_language', ',state="warming"'),
  };
  for (const [k, v] of Object.entries(p)) assert.ok(Number.isFinite(v), `python pool ${k} in /metrics:\n${text}`);
  return p;
}

// Polls /metrics until WANT(pool) holds (a guard of MS, not a timing assertion).
async function until(server, want, what, ms = 120000) {
  const end = Date.now() + ms;
  for (;;) {
    const p = pool(await metrics(server));
    if (want(p)) return p;
    if (Date.now() > end) assert.fail(`${what}: ${JSON.stringify(p)}\n${server.stderrText().slice(-3000)}`);
    await sleep(100);
  }
}

test('a burst larger than the ready pool shows misses in /metrics, then hits once it has refilled', async () => {
  const server = await startServer({ name: 'pool-burst', args: [...ARGS, '--pool', 'python=3'] });
  try {
    const start = await until(server, (p) => p.ready === 3, 'three ready python sandboxes');
    assert.equal(start.target, 3, 'the pool starts at its --pool size');
    assert.equal(start.hits + start.misses, 0);
    const burst = await Promise.all(Array.from({ length: 5 }, (_, i) =>
      callExec(server.client, { language: 'python', code: `print(${i})` })));
    burst.forEach((r, i) => assert.equal(expectStatus(r, 'success', server).stdout, `${i}\n`));
    const after = pool(await metrics(server));
    assert.equal(after.hits + after.misses, 5, JSON.stringify(after));
    assert.ok(after.misses >= 1 && after.hits >= 1, `the burst took the ready ones and went cold for the rest: ${JSON.stringify(after)}`);
    assert.equal(after.target, 3, 'demand above --pool keeps the pool at its maximum');
    // Refilled: the next call is a hit, no new miss.
    await until(server, (p) => p.ready === p.target, 'the pool refilled to its target');
    expectStatus(await callExec(server.client, { language: 'python', code: 'print(9)' }), 'success', server);
    const last = pool(await metrics(server));
    assert.equal(last.hits, after.hits + 1, JSON.stringify(last));
    assert.equal(last.misses, after.misses, JSON.stringify(last));
  } finally {
    await server.close();
  }
});

// Polls cellgate_pool_sandboxes (the ready ones, all languages; a gauge the server had
// before the per-language figures) until it is 1 (a guard of MS).
async function untilOneReady(server, what, ms = 120000) {
  const end = Date.now() + ms;
  while (Number((await metrics(server)).match(/^cellgate_pool_sandboxes (\d+)$/m)?.[1]) !== 1) {
    if (Date.now() > end) assert.fail(`${what}\n${server.stderrText().slice(-3000)}`);
    await sleep(100);
  }
}

test('the pool refills while a user call is in flight', async () => {
  const server = await startServer({ name: 'pool-inflight', args: [...ARGS, '--pool', 'python=1'] });
  const abort = new AbortController();
  const until1 = (what, ms) => untilOneReady(server, what, ms);
  try {
    await until1('a ready python sandbox', 120000);
    // A session's cell that runs until the test cancels it: the session claims the ready
    // sandbox and stays busy meanwhile.
    let settled = false;
    const long = callExec(server.client, { language: 'python', session_id: 'pool_long', code: 'import time\ntime.sleep(600)', timeout: 300 },
      { signal: abort.signal }).catch((err) => err).finally(() => { settled = true; });
    const end = Date.now() + 60000;
    while (!/claimed by a session/.test(server.stderrText())) {
      if (Date.now() > end) assert.fail(`no claim\n${server.stderrText().slice(-3000)}`);
      await sleep(50);
    }
    await until1('no refill while the cell ran', 90000);
    assert.equal(settled, false, 'the cell was still in flight when the pool had refilled');
    const p = pool(await metrics(server));
    assert.deepEqual([p.hits, p.misses, p.ready], [1, 0, 1], JSON.stringify(p));
    abort.abort();
    await long;
  } finally {
    await server.close();
  }
});

// The CPU weight of runc container ID's cgroup (v1 cpu.shares, 1024 by default; v2
// cpu.weight, 100), or undefined without a cpu controller there.
const V2 = !fs.existsSync('/sys/fs/cgroup/memory');
function cpuWeight(id) {
  const file = V2 ? `/sys/fs/cgroup/cellgate/${id}/cpu.weight` : `/sys/fs/cgroup/cpu/cellgate/${id}/cpu.shares`;
  return fs.existsSync(file) ? Number(fs.readFileSync(file, 'utf8')) : undefined;
}

function runcContainers(stateDir) {
  const root = path.join(stateDir, 'runtime-runc');
  if (!fs.existsSync(root)) return [];
  return execFileSync('runc', ['--root', root, 'list', '-q'], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

test('a sandbox warmed beside a user call weighs less for the CPU than a user\'s; the claim gives it the full weight', async (t) => {
  const server = await startServer({ name: 'pool-weight', args: [...ARGS, '--pool', 'python=1'] });
  const abort = new AbortController();
  try {
    await untilOneReady(server, 'a ready python sandbox');
    const full = V2 ? 100 : 1024;
    const [first] = runcContainers(server.stateDir);
    if (!first || cpuWeight(first) === undefined) {
      t.skip('no runc container with a cpu cgroup here');
      return;
    }
    // A session's cell in flight until the test cancels it; the refill warms beside it.
    const long = callExec(server.client, { language: 'python', session_id: 'pool_busy', code: 'import time\ntime.sleep(600)', timeout: 300 },
      { signal: abort.signal }).catch((err) => err);
    const end = Date.now() + 60000;
    while (!/claimed by a session/.test(server.stderrText())) {
      if (Date.now() > end) assert.fail(`no claim\n${server.stderrText().slice(-3000)}`);
      await sleep(50);
    }
    await untilOneReady(server, 'no refill while the cell ran', 90000);
    const [refill] = runcContainers(server.stateDir).filter((id) => id !== first);
    assert.ok(refill, 'the refill\'s container');
    assert.ok(cpuWeight(refill) < full / 2, `the sandbox warmed beside a call: weight ${cpuWeight(refill)}`);
    assert.equal(cpuWeight(first), full, 'the claimed sandbox (now the session\'s) has the full weight');
    abort.abort();
    await long;
    expectStatus(await callExec(server.client, { language: 'python', session_id: 'pool_w', code: 'print(1)' }), 'success', server);
    assert.equal(cpuWeight(refill), full, 'claimed, it has the full weight');
  } finally {
    await server.close();
  }
});
