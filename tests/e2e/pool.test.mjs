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
import path from 'node:path';

import { callExec, expectStatus, sc, show, sleep, startServer } from './lib.mjs';

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

// What identifies a sandbox from inside: its cgroup (named for its container) and kernel pid.
const IDENTITY = 'import os\nprint(open("/proc/self/cgroup").read().strip().split("/")[-1], os.getpid())';

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
      code: `open("/mnt/data/secret_a.txt", "w").write("A")\n${IDENTITY}` }));
    await readyCount(server, 'python', 2);
    const b = sc(await callExec(server.client, { language: 'python', session_id: 'pool_b',
      code: `import os\nprint(os.path.exists("/mnt/data/secret_a.txt"))\n${IDENTITY}` }));
    assert.equal(count(server.stderrText(), 'claimed by a session'), 2, server.stderrText().slice(-3000));
    const [aCgroup, aPid] = a.stdout.trim().split(/\s+/);
    const [bSees, bCgroup, bPid] = b.stdout.trim().split(/\s+/);
    assert.equal(bSees, 'False', 'B must not see A\'s file');
    assert.notEqual(aCgroup, bCgroup, 'different containers');
    // Each kernel has its own HMAC key: the connection files the host keeps differ.
    const keys = [];
    for (const dir of sessionDirs(server.stateDir)) {
      const file = path.join(dir, 'ipc', 'kernel-python.json');
      if (fs.existsSync(file)) keys.push(JSON.parse(fs.readFileSync(file, 'utf8')).key);
    }
    assert.ok(keys.length >= 2, `kernel connection files: ${keys.length}`);
    assert.equal(new Set(keys).size, keys.length, 'every kernel has its own key');
    // A closed session's sandbox goes away; the next session gets another.
    await server.client.callTool({ name: 'close_session', arguments: { session_id: 'pool_a' } });
    await readyCount(server, 'python', 3);
    const c = sc(await callExec(server.client, { language: 'python', session_id: 'pool_c',
      code: `import os\nprint(os.path.exists("/mnt/data/secret_a.txt"))\n${IDENTITY}` }));
    const [cSees, cCgroup] = c.stdout.trim().split(/\s+/);
    assert.equal(cSees, 'False');
    assert.ok(![aCgroup, bCgroup].includes(cCgroup), `C got a sandbox used before: ${cCgroup}`);
    assert.equal(count(server.stderrText(), 'claimed by a session'), 3);
    assert.ok(aPid && bPid);
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
