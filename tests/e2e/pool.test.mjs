// The warm pool (issue 13, point 1): one-shot runs and new sessions take a sandbox that was
// warmed before they asked (kernel started, pandas preloaded), each sandbox is claimed by
// one run or session only and never handed out again, a burst larger than the pool falls
// back to cold starts without errors, --pool 0 serves as before, and shutdown leaves no
// pooled container or run directory. The server logs at debug what the pool does ("pool: a
// python sandbox is ready", "... claimed by a session"); the tests wait on those lines.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { callExec, expectStatus, sc, show, sleep, startRawServer, startServer } from './lib.mjs';

const POOL_ARGS = ['--http-listen', 'off', '--log-level', 'debug', '--workspace-mb', '0'];

const count = (text, re) => (text.match(new RegExp(re, 'g')) || []).length;

// Waits until the server's log says `n` sandboxes of LANGUAGE became ready (a guard, not a
// timing assertion).
async function readyCount(server, language, n, ms = 90000) {
  const re = `pool: a ${language} sandbox is ready`;
  const end = Date.now() + ms;
  while (count(server.stderrText(), re) < n) {
    if (Date.now() > end) assert.fail(`no ${n} ready ${language} sandbox(es) within ${ms} ms\n${server.stderrText().slice(-3000)}`);
    await sleep(100);
  }
}

function runcContainers(stateDir) {
  const root = path.join(stateDir, 'runtime-runc');
  if (!fs.existsSync(root)) return [];
  return execFileSync('runc', ['--root', root, 'list', '-q'], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

function sessionDirs(stateDir) {
  const instances = path.join(stateDir, 'instances');
  if (!fs.existsSync(instances)) return [];
  const dirs = [];
  for (const inst of fs.readdirSync(instances)) {
    const sessions = path.join(instances, inst, 'sessions');
    if (fs.existsSync(sessions)) for (const d of fs.readdirSync(sessions)) dirs.push(path.join(sessions, d));
  }
  return dirs;
}

// A session's kernel as the host sees it (list_sessions' pid, its host pid).
async function hostPid(server, id) {
  const listed = sc(await server.client.callTool({ name: 'list_sessions', arguments: {} })).sessions;
  return listed.find((x) => x.session_id === id)?.pid;
}

test('a one-shot run and a new session take warm sandboxes: pandas preloaded, counts from 1', async () => {
  const server = await startServer({ name: 'pool-basic', args: [...POOL_ARGS, '--pool', 'python=1'] });
  try {
    await readyCount(server, 'python', 1);
    const one = expectStatus(await callExec(server.client, { language: 'python',
      code: 'import sys\nprint("pandas" in sys.modules, "pandas" in dir(), get_ipython().execution_count)' }), 'success', server);
    // Preloaded into sys.modules, no name bound in the user's namespace, the preload not counted.
    assert.equal(one.stdout, 'True False 1\n', show(one, server));
    assert.match(server.stderrText(), /pool: python sandbox \w+ claimed by a one-shot run/);
    await readyCount(server, 'python', 2);
    const first = expectStatus(await callExec(server.client, { language: 'python', session_id: 'pool_s1',
      code: 'import sys, pandas\nprint(pandas.__name__, sys.modules["numpy"].__name__)' }), 'success', server);
    assert.equal(first.stdout, 'pandas numpy\n');
    assert.match(server.stderrText(), /pool: python sandbox \w+ claimed by a session/);
    const second = expectStatus(await callExec(server.client, { language: 'python', session_id: 'pool_s1', code: 'print(pandas.__version__ != "")' }), 'success', server);
    assert.equal(second.stdout, 'True\n');
  } finally {
    await server.close();
  }
});

test('two sessions never share a pooled sandbox, workspace, kernel or key; a closed one is not handed out again', async () => {
  const server = await startServer({ name: 'pool-isolation', args: [...POOL_ARGS, '--pool', 'python=1'] });
  try {
    await readyCount(server, 'python', 1);
    const a = sc(await callExec(server.client, { language: 'python', session_id: 'pool_a',
      code: 'open("/mnt/data/secret_a.txt", "w").write("A")' }));
    assert.equal(a.status, 'success', JSON.stringify(a));
    await readyCount(server, 'python', 2);
    const b = sc(await callExec(server.client, { language: 'python', session_id: 'pool_b',
      code: 'import os\nprint(os.path.exists("/mnt/data/secret_a.txt"))' }));
    assert.equal(b.stdout, 'False\n', 'B must not see A\'s file');
    assert.equal(count(server.stderrText(), 'claimed by a session'), 2, server.stderrText().slice(-3000));
    const aPid = await hostPid(server, 'pool_a');
    const bPid = await hostPid(server, 'pool_b');
    assert.ok(aPid > 0 && bPid > 0 && aPid !== bPid, `kernels differ: ${aPid} ${bPid}`);
    // Each kernel has its own HMAC key: the connection files the host keeps differ.
    const keys = [];
    for (const dir of sessionDirs(server.stateDir)) {
      const file = path.join(dir, 'ipc', 'kernel-python.json');
      if (fs.existsSync(file)) keys.push(JSON.parse(fs.readFileSync(file, 'utf8')).key);
    }
    assert.ok(keys.length >= 2, `kernel connection files (A's and B's at least): ${keys.length}`);
    assert.equal(new Set(keys).size, keys.length, 'every kernel has its own key');
    // A closed session's sandbox goes away; the next session gets another. Counted once the
    // pool has refilled after B's claim (its new sandbox is then counted on both sides).
    await readyCount(server, 'python', 3);
    const containers = runcContainers(server.stateDir).length;
    await server.client.callTool({ name: 'close_session', arguments: { session_id: 'pool_a' } });
    const c = sc(await callExec(server.client, { language: 'python', session_id: 'pool_c',
      code: 'import os\nprint(os.path.exists("/mnt/data/secret_a.txt"))' }));
    assert.equal(c.stdout, 'False\n');
    const cPid = await hostPid(server, 'pool_c');
    assert.ok(cPid > 0 && ![aPid, bPid].includes(cPid), `C got a kernel used before: ${cPid}`);
    assert.equal(count(server.stderrText(), 'claimed by a session'), 3);
    assert.ok(runcContainers(server.stateDir).length <= containers, 'A\'s container is gone, not kept');
  } finally {
    await server.close();
  }
});

test('--pool 0 serves as before: cold sandboxes, nothing preloaded, no pool', async () => {
  const server = await startServer({ name: 'pool-off', args: [...POOL_ARGS, '--pool', '0'] });
  try {
    const one = expectStatus(await callExec(server.client, { language: 'python', code: 'import sys\nprint("pandas" in sys.modules)' }), 'success', server);
    assert.equal(one.stdout, 'False\n');
    const s = expectStatus(await callExec(server.client, { language: 'python', session_id: 'off_s', code: 'print(2)' }), 'success', server);
    assert.equal(s.stdout, '2\n');
    assert.doesNotMatch(server.stderrText(), /pool: /);
  } finally {
    await server.close();
  }
});

test('a burst of new sessions larger than the pool all succeed: the rest start cold', async () => {
  const N = 6;
  const server = await startServer({ name: 'pool-burst', args: [...POOL_ARGS, '--pool', 'python=1', '--max-sessions', String(N + 2)] });
  try {
    await readyCount(server, 'python', 1);
    const results = await Promise.all(Array.from({ length: N }, (_, i) =>
      callExec(server.client, { language: 'python', session_id: `burst_${i}`, code: `print(${i} * 2)` })));
    results.forEach((r, i) => assert.equal(expectStatus(r, 'success', server).stdout, `${i * 2}\n`));
    assert.equal(count(server.stderrText(), 'claimed by a session'), 1, 'one from the pool, the rest cold');
  } finally {
    await server.close();
  }
});

test('shutdown destroys the pooled sandboxes: no container or run directory is left', async () => {
  const server = await startServer({ name: 'pool-shutdown', args: [...POOL_ARGS, '--pool', 'python=1,javascript=1,bash=1'] });
  const state = server.stateDir;
  let closed = false;
  try {
    await readyCount(server, 'python', 1);
    await readyCount(server, 'javascript', 1);
    await readyCount(server, 'bash', 1);
    assert.equal(runcContainers(state).length, 3, 'three pooled containers run');
    assert.equal(sessionDirs(state).filter((d) => fs.existsSync(path.join(d, 'pool'))).length, 3, 'each labelled "pool"');
    await server.client.close();
    closed = true;
    const end = Date.now() + 30000;
    while ((runcContainers(state).length || sessionDirs(state).length) && Date.now() < end) await sleep(200);
    assert.deepEqual(runcContainers(state), []);
    assert.deepEqual(sessionDirs(state), []);
  } finally {
    if (!closed) await server.client.close();
    await server.close();
  }
});

test('a server told to stop while a pooled sandbox preloads stops without waiting for it: no container, run directory or mount is left', async () => {
  // The preload imports a module of the shared package layer that takes 120 s: a server that
  // waited for it would be killed by the SDK's close (stdin ended, 2 s, SIGTERM, 2 s,
  // SIGKILL) and leave its sandbox running.
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-pool-stop-'));
  fs.mkdirSync(path.join(state, 'packages', 'python'), { recursive: true });
  fs.writeFileSync(path.join(state, 'packages', 'python', 'cgslowpreload.py'), 'import time\ntime.sleep(120)\n');
  const server = await startServer({ name: 'pool-stop-preload', stateDir: state, args: [...POOL_ARGS, '--pool', 'python=1', '--pool-preload', 'cgslowpreload'] });
  let exit = null;
  server.transport._process?.on('exit', (code, signal) => { exit = { code, signal }; });
  try {
    const end = Date.now() + 90000;
    while (!/pool: sandbox \S+ runs its preload/.test(server.stderrText()) && Date.now() < end) await sleep(100);
    assert.match(server.stderrText(), /pool: sandbox \S+ runs its preload/, 'the warm-up reached its preload');
    assert.equal(runcContainers(state).length, 1, 'the warming sandbox runs');
    await server.client.close();
    for (let i = 0; i < 100 && !exit; i++) await sleep(100);
    assert.notEqual(exit?.signal, 'SIGKILL', `the server was killed: ${JSON.stringify(exit)}\n${server.stderrText().slice(-2000)}`);
    assert.deepEqual(runcContainers(state), []);
    assert.deepEqual(sessionDirs(state), []);
    assert.match(server.stderrText(), /stopped during its warm-up/);
  } finally {
    await server.close();
    fs.rmSync(state, { recursive: true, force: true });
  }
});

test('after a crash (SIGKILL) the next start removes the pooled sandboxes the dead server left', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-pool-crash-'));
  const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const first = startRawServer(state, { args: [...POOL_ARGS, '--pool', 'python=1,bash=1'] });
  let second = null;
  try {
    first.send(INIT);
    await first.next();
    const end = Date.now() + 90000;
    while (count(first.stderr(), 'sandbox is ready') < 2 && Date.now() < end) await sleep(100);
    assert.equal(runcContainers(state).length, 2, `two pooled containers\n${first.stderr()}`);
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => first.proc.on('exit', resolve));
    assert.equal(runcContainers(state).length, 2, 'the killed server could not clean up');
    second = startRawServer(state, { args: [...POOL_ARGS, '--pool', '0'] });
    second.send(INIT);
    await second.next(); // start-up clean-up happens before the server answers
    assert.deepEqual(runcContainers(state), [], 'the orphaned pool sandboxes are gone');
    assert.deepEqual(sessionDirs(state), [], 'and their directories');
  } finally {
    if (first.proc.exitCode === null) first.proc.kill('SIGKILL');
    if (second) {
      second.proc.stdin.end();
      await new Promise((resolve) => second.proc.on('exit', resolve));
    }
    if (!fs.readFileSync('/proc/mounts', 'utf8').includes(state)) fs.rmSync(state, { recursive: true, force: true });
  }
});

test('/metrics counts the ready pooled sandboxes; under memory pressure the pool stays empty and runs start cold', async () => {
  const server = await startServer({ name: 'pool-metrics', args: ['--http-listen', '127.0.0.1:0', '--log-level', 'debug', '--workspace-mb', '0', '--pool', 'python=1,bash=1'] });
  try {
    await readyCount(server, 'python', 1);
    await readyCount(server, 'bash', 1);
    const port = server.stderrText().match(/listening on http:\/\/[^:]+:(\d+)/)?.[1];
    assert.ok(port, server.stderrText().slice(-2000));
    const admin = fs.readFileSync(path.join(server.stateDir, 'admin-token'), 'utf8');
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${admin}` } })).text();
    assert.match(text, /^cellgate_pool_sandboxes 2$/m, text);
  } finally {
    await server.close();
  }
  // A threshold above any host's MemAvailable: the pool never fills, the runs still work.
  const pressed = await startServer({ name: 'pool-pressure', args: [...POOL_ARGS, '--pool', 'python=1', '--pool-min-available-mb', '1048576'] });
  try {
    const end = Date.now() + 30000;
    while (!/below --pool-min-available-mb/.test(pressed.stderrText()) && Date.now() < end) await sleep(100);
    assert.match(pressed.stderrText(), /emptying the pool/);
    const r = expectStatus(await callExec(pressed.client, { language: 'python', code: 'print(3)' }), 'success', pressed);
    assert.equal(r.stdout, '3\n');
    assert.doesNotMatch(pressed.stderrText(), /sandbox is ready|claimed by/);
  } finally {
    await pressed.close();
  }
});
