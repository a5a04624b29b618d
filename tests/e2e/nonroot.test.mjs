// A normal user (not root) who starts `cellgate mcp` is served by the rootless backend with
// no set-up: the state lands in the XDG state dir, and Python runs. Asking such a user's
// server for a backend that needs root (--backend oci, docker) gets one clear message and
// exit code 2 instead of a bare "Permission denied". `help` and `--version` answer. Runs the
// server as uid/gid 65534 (nobody) with setpriv (util-linux), from copies of the binary and
// the kernels that nobody can read wherever the checkout is (a CI clone's directories may be
// closed to other users).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import { REPO_ROOT, serverBinary, which } from './lib.mjs';

const NOBODY = 65534;
let copy;
let bin;

before(() => {
  copy = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-nonroot-bin-'));
  fs.chmodSync(copy, 0o755);
  bin = path.join(copy, 'cellgate');
  fs.copyFileSync(serverBinary(), bin);
  fs.chmodSync(bin, 0o755);
  fs.mkdirSync(path.join(copy, 'kernels'));
  fs.cpSync(path.join(REPO_ROOT, 'kernels', 'python'), path.join(copy, 'kernels', 'python'), { recursive: true });
});
after(() => fs.rmSync(copy, { recursive: true, force: true }));

// A directory owned by nobody (a home, a state dir).
function nobodyDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chownSync(dir, NOBODY, NOBODY);
  return dir;
}

const nobodyEnv = (extra) => ({ PATH: '/usr/bin:/bin', CELLGATE_KERNELS_DIR: path.join(copy, 'kernels'), CELLGATE_POOL: '0', ...extra });

const asNobody = (args, { input = '', env = {} } = {}) =>
  spawnSync('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', bin, ...args],
    { encoding: 'utf8', input, timeout: 30000, cwd: os.tmpdir(), env: nobodyEnv(env) });

// PROMISE, or a rejection naming WHAT after MS (the timer cleared either way).
async function within(promise, ms, what) {
  let timer;
  try {
    return await Promise.race([promise, new Promise((_, no) => { timer = setTimeout(() => no(new Error(what())), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts `cellgate mcp ARGS` as nobody, initializes, runs CODE; resolves with the answer and the log. */
async function serveAsNobody(args, env, code) {
  const proc = spawn('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', bin, 'mcp', '--http-listen', 'off', ...args],
    { cwd: os.tmpdir(), env: nobodyEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const lines = readline.createInterface({ input: proc.stdout });
  const answers = [];
  const waiting = [];
  lines.on('line', (line) => { const m = JSON.parse(line); if (waiting.length) waiting.shift()(m); else answers.push(m); });
  const next = () => (answers.length ? Promise.resolve(answers.shift()) : new Promise((r) => waiting.push(r)));
  const send = (m) => proc.stdin.write(JSON.stringify(m) + '\n');
  try {
    send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'nonroot', version: '1' } } });
    const init = await within(next(), 30000, () => `no initialize answer:\n${stderr}`);
    assert.equal(init.result?.serverInfo?.name, 'cellgate', stderr);
    send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code } } });
    const answer = await within(next(), 60000, () => `no answer:\n${stderr}`);
    return { answer, stderr: () => stderr };
  } finally {
    proc.stdin.end();
    await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
  }
}

test('as a normal user, mcp serves with the rootless backend and says what it enforces', async (t) => {
  if (!which('setpriv')) return t.skip('setpriv (util-linux) is not installed');
  const state = nobodyDir('cg-nonroot-state-');
  try {
    const { answer, stderr } = await serveAsNobody(['--state-dir', state], { HOME: '/nonexistent' },
      'import os\nprint(os.getuid(), open("/proc/self/status").read().split("CapEff:")[1].split()[0])');
    assert.equal(answer.result?.structuredContent?.stdout, '0 0000000000000000\n', JSON.stringify(answer) + stderr());
    assert.match(stderr(), /sandbox backend: rootless \(--backend auto/);
    assert.match(stderr(), /rootless sandboxes: enforced .*memory.*; NOT enforced .*CPU share/);
    assert.ok(fs.existsSync(path.join(state, 'instances')), 'the state is in --state-dir');
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});

test("a normal user's state goes to the XDG state dir when none is given", async (t) => {
  if (!which('setpriv')) return t.skip('setpriv (util-linux) is not installed');
  const home = nobodyDir('cg-nonroot-home-');
  const xdg = nobodyDir('cg-nonroot-xdg-');
  try {
    let run = await serveAsNobody([], { HOME: home }, 'print(1)');
    assert.equal(run.answer.result?.structuredContent?.stdout, '1\n', run.stderr());
    assert.ok(fs.existsSync(path.join(home, '.local', 'state', 'cellgate', 'instances')), run.stderr());
    run = await serveAsNobody([], { HOME: home, XDG_STATE_HOME: xdg }, 'print(2)');
    assert.equal(run.answer.result?.structuredContent?.stdout, '2\n', run.stderr());
    assert.ok(fs.existsSync(path.join(xdg, 'cellgate', 'instances')), run.stderr());
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(xdg, { recursive: true, force: true });
  }
});

test('as a normal user, the backends that need root refuse with a clear message; help and --version answer', (t) => {
  if (!which('setpriv')) return t.skip('setpriv (util-linux) is not installed');
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-nonroot-'));
  fs.chmodSync(state, 0o777);
  try {
    for (const args of [['mcp', '--backend', 'oci'], ['mcp', '--backend', 'docker', '--state-dir', state, '--http-listen', 'off'], ['kernel', '--backend', 'oci', '--state-dir', state]]) {
      const r = asNobody(args);
      assert.equal(r.status, 2, `${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`cellgate ${args[0]}: --backend ${args[2]} needs root.*uid ${NOBODY}`), r.stderr);
      assert.match(r.stderr, /--backend rootless/);
      assert.match(r.stderr, /sudo -n/);
      assert.equal(r.stdout, '', 'nothing on stdout (it is the MCP channel)');
    }
    assert.deepEqual(fs.readdirSync(state), [], 'nothing made in the state dir');
    assert.equal(asNobody(['--version']).status, 0);
    assert.equal(asNobody(['help']).status, 0);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});
