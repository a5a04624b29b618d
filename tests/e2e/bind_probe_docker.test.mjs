// The Docker backend's start-up probe (containers/cg_docker_probe.c), against Podman's
// Docker-compatible service: sandboxes are the engine's containers, so every path the server
// binds into them must be the same on the engine's host, mounts made below the state dir must
// reach that host, and the server must see the sandboxes' processes by their host pids. Each
// case runs the server where one of these does not hold (a mount namespace of its own with a
// private tmpfs or bind, a pid namespace of its own) and expects a refusal at start-up that
// names the rule and the fix; the cases that hold serve and run code.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { REPO_ROOT, sleep, startRawServer } from './lib.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

const SKIP = podmanMissing();
let podman;
const dirs = [];

before(async () => {
  if (SKIP) return;
  podman = await startPodman();
});

after(async () => {
  await podman?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

// Runs the server with ARGS in a mount namespace of its own (unshare, private propagation)
// after SETUP (a shell command; $1 is the state dir), with UNSHARE's extra flags. Resolves
// { code (null while it serves), stderr, server } once it exits or says it serves.
async function run(setup, args, { unshare = [] } = {}) {
  const state = tempDir('cg-e2e-probe-');
  const prefix = ['unshare', '-m', '--propagation', 'private', ...unshare, 'sh', '-c', `${setup} && exec "$@"`, 'sh'];
  // sh's "$@" starts at the binary; $1 (the state dir) is read by SETUP through the env.
  const server = startRawServer(state, { args: [...podman.args, '--log-level', 'info', ...args], prefix, env: { CG_PROBE_STATE: state } });
  const exited = new Promise((resolve) => server.proc.on('exit', (code) => resolve(code)));
  let code = null;
  for (let i = 0; i < 1200 && code === null && !/serving MCP/.test(server.stderr()); i++) {
    code = await Promise.race([exited, sleep(100).then(() => null)]);
  }
  return { code, stderr: server.stderr(), server, state, exited };
}

async function stop(result) {
  if (result.code !== null) return;
  result.server.proc.stdin.end();
  const timer = setTimeout(() => result.server.proc.kill('SIGKILL'), 30000);
  await result.exited;
  clearTimeout(timer);
}

// A copy of the kernel specs in a directory the engine's host has empty: mounted as a
// private tmpfs in the server's namespace only.
function hiddenKernels() {
  const dir = tempDir('cg-e2e-kernels-');
  const copies = ['python', 'javascript', 'r']
    .map((name) => `mkdir "${dir}/${name}" && cp "${REPO_ROOT}/kernels/${name}/kernel.json" "${dir}/${name}/"`)
    .join(' && ');
  return { dir, setup: `mount -t tmpfs cg-e2e "${dir}" && ${copies}` };
}

test('a state dir the engine cannot see is refused at start-up, naming the same-path rule', { skip: SKIP }, async () => {
  const r = await run('mount -t tmpfs cg-e2e "$CG_PROBE_STATE"', []);
  await stop(r);
  assert.notEqual(r.code, null, `the server started:\n${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /does not see this server's state dir/);
  assert.ok(r.stderr.includes(`-v ${r.state}:${r.state}:rshared`), r.stderr);
  assert.match(r.stderr, /docs\/deploy\.md/);
});

test('a state dir whose mounts do not reach the engine is refused, naming rshared and --workspace-mb 0', { skip: SKIP }, async () => {
  const r = await run('mount --bind "$CG_PROBE_STATE" "$CG_PROBE_STATE"', []);
  await stop(r);
  assert.notEqual(r.code, null, `the server started:\n${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /not a file system this server mounts below it/);
  assert.match(r.stderr, /:rshared/);
  assert.match(r.stderr, /--workspace-mb 0/);
  assert.deepEqual(fs.readdirSync(r.state).filter((n) => n.startsWith('probe-')), [], 'the probe left its directory');
});

test('the same state dir without session disks serves (nothing is mounted below it)', { skip: SKIP }, async () => {
  const r = await run('mount --bind "$CG_PROBE_STATE" "$CG_PROBE_STATE"', ['--workspace-mb', '0']);
  await stop(r);
  assert.equal(r.code, null, `the server did not serve:\n${r.stderr}`);
  assert.match(r.stderr, /docker bind probe: .* sees the state dir and/);
});

test('a kernels dir the engine cannot see is refused, naming --image-kernels', { skip: SKIP }, async () => {
  const kernels = hiddenKernels();
  const r = await run(kernels.setup, ['--workspace-mb', '0', '--kernels-dir', kernels.dir]);
  await stop(r);
  assert.notEqual(r.code, null, `the server started:\n${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.ok(r.stderr.includes(`does not see ${kernels.dir}, the kernels dir (--kernels-dir), at the same path`), r.stderr);
  assert.match(r.stderr, /--image-kernels on/);
});

test('--image-kernels on: the same server runs the image\'s kernels, Python and JavaScript', { skip: SKIP }, async () => {
  const kernels = hiddenKernels();
  const r = await run(kernels.setup, ['--workspace-mb', '0', '--kernels-dir', kernels.dir, '--image-kernels', 'on']);
  try {
    assert.equal(r.code, null, `the server did not serve:\n${r.stderr}`);
    const { server } = r;
    server.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '0' } } });
    assert.equal((await server.next()).id, 1);
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const cells = [['python', 'print(6 * 7)', '42'], ['javascript', 'console.log(6 * 7 + 1)', '43']];
    for (const [i, [language, code, want]] of cells.entries()) {
      server.send({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'execute_code', arguments: { language, code, session_id: 'probe' } } });
      let reply;
      do reply = await server.next(); while (reply.id !== 10 + i);
      assert.equal(reply.result?.structuredContent?.stdout?.trim(), want, JSON.stringify(reply).slice(0, 2000));
    }
  } finally {
    await stop(r);
  }
});

test('--image-kernels on with an image that has no kernels is refused', { skip: SKIP }, async () => {
  const r = await run('true', ['--workspace-mb', '0', '--image-kernels', 'on', '--image', 'localhost/cellgate-base:bookworm']);
  await stop(r);
  assert.notEqual(r.code, null, `the server started:\n${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /the sandbox image localhost\/cellgate-base:bookworm has no \/opt\/cellgate\/kernels\//);
  assert.match(r.stderr, /--image-kernels off/);
});

test('a server that cannot see the sandboxes\' processes (a pid namespace of its own) is refused', { skip: SKIP }, async () => {
  const r = await run('true', ['--workspace-mb', '0'], { unshare: ['--pid', '--fork', '--mount-proc'] });
  await stop(r);
  assert.notEqual(r.code, null, `the server started:\n${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /does not see the sandboxes' processes/);
  assert.match(r.stderr, /--pid host/);
});

test('a killed server\'s probe leftovers (its directory and tmpfs, older than any live probe) are removed at the next start', { skip: SKIP }, async () => {
  const state = tempDir('cg-e2e-probe-');
  const stale = path.join(state, 'probe-0123456789abcdef');
  const fresh = path.join(state, 'probe-fedcba9876543210');
  fs.mkdirSync(stale);
  fs.mkdirSync(fresh);
  execFileSync('mount', ['-t', 'tmpfs', 'cg-e2e', stale]);
  fs.writeFileSync(path.join(stale, 'inside-0123456789abcdef'), '');
  const old = new Date(Date.now() - 20 * 60 * 1000);
  fs.utimesSync(stale, old, old);
  const server = startRawServer(state, { args: [...podman.args, '--log-level', 'info'] });
  const exited = new Promise((resolve) => server.proc.on('exit', resolve));
  try {
    for (let i = 0; i < 1200 && server.proc.exitCode === null && !/serving MCP/.test(server.stderr()); i++) await sleep(100);
    assert.match(server.stderr(), /serving MCP/, server.stderr());
    assert.ok(!fs.existsSync(stale), `${stale} is still there`);
    assert.ok(!fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${stale} `), 'its tmpfs is still mounted');
    assert.ok(fs.existsSync(fresh), 'a recent probe directory (another server\'s, maybe live) was removed');
  } finally {
    try { execFileSync('umount', ['-l', stale], { stdio: 'ignore' }); } catch { /* removed by the server */ }
    server.proc.stdin.end();
    await exited;
  }
});
