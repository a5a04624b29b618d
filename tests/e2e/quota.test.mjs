// Workspace limits (issue 9, finding 3): each session's /mnt/data is a file system of its
// own (--workspace-mb, --workspace-inodes), so filling it stops with ENOSPC inside the
// sandbox while the host, the state dir and other sessions keep their space; list_sessions
// shows it; close_session and a restart after SIGKILL leave no mount and no image behind.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, sc, show, sleep, startRawServer, startServer } from './lib.mjs';

const LIMIT_MB = 64;
const INODES = 2000;
// Through the environment, so that a build without the limit still starts and fails the
// checks themselves (CELLGATE_BIN=<a build before issue 9, finding 3>).
const LIMIT_ENV = { CELLGATE_WORKSPACE_MB: String(LIMIT_MB), CELLGATE_WORKSPACE_INODES: String(INODES) };

let server;

before(async () => {
  server = await startServer({ name: 'quota', args: ['--http-listen', 'off'], env: LIMIT_ENV });
});

after(async () => {
  await server?.close();
});

const call = (name, args) => server.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
const bash = (session_id, code, timeout = 60) => callExec(server.client, { language: 'bash', session_id, code, timeout });

/** The mount points below DIR in this (the host's) mount namespace. */
function mountsBelow(dir) {
  const prefix = dir + '/';
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))))
    .filter((point) => point.startsWith(prefix));
}

/** Mounts per session: its disk (workspace and package layer) and its ipc tmpfs. */
const PER_SESSION = 2;

/** The disk images below STATE: <state>/instances/<id>/sessions/<slot>/disk.img. */
function imagesBelow(state) {
  const found = [];
  const instances = path.join(state, 'instances');
  for (const i of fs.existsSync(instances) ? fs.readdirSync(instances) : []) {
    const sessions = path.join(instances, i, 'sessions');
    for (const slot of fs.existsSync(sessions) ? fs.readdirSync(sessions) : []) {
      const image = path.join(sessions, slot, 'disk.img');
      if (fs.existsSync(image)) found.push(image);
    }
  }
  return found;
}

/** Free bytes for an unprivileged writer on the file system holding DIR. */
function freeBytes(dir) {
  const st = fs.statfsSync(dir);
  return st.bavail * st.bsize;
}

/** Polls COND (every 200 ms, at most MS) until it is true; returns its last value. */
async function until(cond, ms = 20000) {
  const deadline = Date.now() + ms;
  let value = cond();
  while (!value && Date.now() < deadline) {
    await sleep(200);
    value = cond();
  }
  return value;
}

const listed = async (sid) => sc(await call('list_sessions', {})).sessions.find((s) => s.session_id === sid);

test('a full workspace is ENOSPC inside the sandbox; the host, other sessions and the kernel carry on', async () => {
  const full = 'q_full';
  let r = await bash(full, 'df -k /mnt/data | tail -1; touch /mnt/data/ok && echo made');
  assert.equal(sc(r).status, 'success', show(r, server));
  assert.match(sc(r).stdout, /made/);

  // 100 MB into a 64 MB workspace: dd stops with ENOSPC and the host loses at most the limit.
  const freeBefore = freeBytes(server.stateDir);
  r = await bash(full, 'dd if=/dev/zero of=/mnt/data/big bs=1M count=100 conv=fsync 2>&1; echo "dd exit $?"', 120);
  const freeAfter = freeBytes(server.stateDir);
  const out = sc(r).stdout;
  assert.match(out, /No space left on device/, show(r, server));
  assert.doesNotMatch(out, /dd exit 0/, show(r, server));
  const lostMb = (freeBefore - freeAfter) / (1 << 20);
  // The limit plus slack for what the other tests on this machine write meanwhile.
  assert.ok(lostMb <= LIMIT_MB + 16, `the state dir's file system lost ${lostMb.toFixed(1)} MB (limit ${LIMIT_MB} MB)`);

  // Inodes: 5,000 files stop with ENOSPC near the inode limit, whatever space is left.
  r = await bash(full, 'rm -f /mnt/data/big; mkdir /mnt/data/many && cd /mnt/data/many && '
    + 'for i in $(seq 5000); do : > f$i || { echo "stopped at $i"; exit 3; }; done; echo "made all"', 120);
  assert.equal(sc(r).exit_code, 3, show(r, server));
  assert.match(sc(r).stderr, /No space left on device/, show(r, server));
  const stoppedAt = Number(sc(r).stdout.match(/stopped at (\d+)/)?.[1]);
  assert.ok(stoppedAt > INODES / 2 && stoppedAt <= INODES + 64, `stopped at file ${stoppedAt}`);

  assert.equal(mountsBelow(server.stateDir).length, PER_SESSION, `one session's mounts: ${mountsBelow(server.stateDir)}`);
  assert.equal(imagesBelow(server.stateDir).length, 1, 'one workspace image');

  // Another session writes and runs.
  r = await bash('q_other', 'head -c 1048576 /dev/zero > /mnt/data/one.bin && stat -c %s /mnt/data/one.bin');
  assert.equal(sc(r).status, 'success', show(r, server));
  assert.equal(sc(r).stdout.trim(), '1048576');

  // The full session's Python kernel still starts and answers (its state lives in /tmp).
  r = await callExec(server.client, { language: 'python', session_id: full, code: 'x = 20\nprint(x + 22)' });
  assert.equal(sc(r).status, 'success', show(r, server));
  assert.equal(sc(r).stdout, '42\n');

  // list_sessions: the file system's own figures.
  const f = await listed(full);
  const o = await listed('q_other');
  assert.ok(f && o, 'both sessions listed');
  for (const s of [f, o]) {
    assert.ok(s.workspace_limit_mb > LIMIT_MB * 0.8 && s.workspace_limit_mb <= LIMIT_MB, `limit ${s.workspace_limit_mb} MB`);
    assert.ok(s.workspace_inodes_limit >= INODES * 0.9 && s.workspace_inodes_limit <= INODES + 64, `inodes ${s.workspace_inodes_limit}`);
  }
  assert.equal(f.workspace_inodes_used, f.workspace_inodes_limit, `full: ${JSON.stringify(f)}`);
  assert.ok(o.workspace_used_mb >= 1 && o.workspace_used_mb < 4, `other used ${o.workspace_used_mb} MB`);
  assert.ok(o.workspace_inodes_used > 1 && o.workspace_inodes_used < 64, `other inodes ${o.workspace_inodes_used}`);

  // Closing a session unmounts its workspace and removes its image; the other keeps its own.
  await call('close_session', { session_id: full });
  assert.ok(await until(() => mountsBelow(server.stateDir).length === PER_SESSION && imagesBelow(server.stateDir).length === 1),
    `after close: mounts ${mountsBelow(server.stateDir)}, images ${imagesBelow(server.stateDir)}`);
  await call('close_session', { session_id: 'q_other' });
  assert.ok(await until(() => mountsBelow(server.stateDir).length === 0 && imagesBelow(server.stateDir).length === 0),
    `after both closed: mounts ${mountsBelow(server.stateDir)}, images ${imagesBelow(server.stateDir)}`);
});

test('uploads land in the limited workspace and a one-shot sandbox is limited too', async () => {
  const r = await call('upload_file', { session_id: 'q_upload', filename: 'a.txt', content_base64: Buffer.from('hello').toString('base64') });
  assert.ok(!r.isError, JSON.stringify(r));
  const run = await bash('q_upload', 'cat /mnt/data/a.txt; df -k /mnt/data | tail -1');
  assert.match(sc(run).stdout, /^hello/, show(run, server));
  const one = await callExec(server.client, { language: 'bash', code: 'df -k --output=size /mnt/data | tail -1' });
  const kb = Number(sc(one).stdout.trim());
  assert.ok(kb > 0 && kb <= LIMIT_MB * 1024, `one-shot /mnt/data has ${kb} kB`);
  await call('close_session', { session_id: 'q_upload' });
  assert.ok(await until(() => mountsBelow(server.stateDir).length === 0), `left: ${mountsBelow(server.stateDir)}`);
});

/** `cellgate mcp` with the limit on STATE over raw stdio (under PREFIX, a command and its
    arguments, when given). */
const startRaw = (state, prefix = []) => startRawServer(state, { args: ['--http-listen', 'off'], env: LIMIT_ENV, prefix });

const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'quota-raw', version: '1' } } };

test('a server started after a SIGKILLed one unmounts what that one left', async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-quota-crash-'));
  let first;
  let second;
  try {
    first = startRaw(state);
    first.send(INIT);
    await first.next();
    first.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'bash', code: 'echo x > /mnt/data/x', session_id: 'left_a' } } });
    first.send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'bash', code: 'echo x > /mnt/data/x', session_id: 'left_b' } } });
    for (let i = 0; i < 2; i++) {
      const m = await first.next();
      assert.equal(m.result?.structuredContent?.status, 'success', `${JSON.stringify(m)}\n${first.stderr()}`);
    }
    const left = mountsBelow(state);
    assert.equal(left.length, 2 * PER_SESSION, `two sessions' mounts: ${left}`);
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => first.proc.on('exit', resolve));
    assert.deepEqual(mountsBelow(state), left, 'the killed server could not unmount');

    second = startRaw(state);
    second.send(INIT);
    await second.next();      // start-up clean-up happens before the server answers
    assert.deepEqual(mountsBelow(state), [], `mounts left from the first run: ${mountsBelow(state)}\n${second.stderr()}`);
    assert.deepEqual(imagesBelow(state), [], 'images left from the first run');
    assert.equal(fs.readdirSync(path.join(state, 'instances')).length, 1, 'only the new instance directory remains');
  } finally {
    // A first server still running (a check failed before the kill) cleans up on its own.
    for (const s of [first, second]) {
      if (!s || s.proc.exitCode !== null || s.proc.signalCode !== null) continue;
      s.proc.stdin.end();
      await new Promise((resolve) => s.proc.on('exit', resolve));
    }
    // Never recurse into a mount; leave the dir for inspection then.
    if (mountsBelow(state).length === 0) fs.rmSync(state, { recursive: true, force: true });
    else process.stderr.write(`quota test: ${state} still has mounts, not removed\n`);
  }
});

test('without the privilege to mount, a session fails with the cause and the way out, never unlimited', async () => {
  // A user namespace's root may not mount an ext4 image: what an unprivileged host gives.
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-quota-unpriv-'));
  const s = startRaw(state, ['unshare', '--user', '--map-root-user', '--mount']);
  try {
    s.send(INIT);
    await s.next();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'bash', code: 'df -k /mnt/data', session_id: 'no_loop' } } });
    const m = await s.next();
    const r = m.result?.structuredContent;
    assert.equal(r?.status, 'setup_error', `${JSON.stringify(m)}\n${s.stderr()}`);
    assert.equal(r.error_code, 'SANDBOX_SETUP_FAILED');
    assert.match(r.error_message, /workspace file system/, r.error_message);
    assert.match(r.error_message, /--workspace-mb 0 turns the limit off/, r.error_message);
  } finally {
    s.proc.stdin.end();
    await new Promise((resolve) => s.proc.on('exit', resolve));
    if (mountsBelow(state).length === 0) fs.rmSync(state, { recursive: true, force: true });
  }
});
