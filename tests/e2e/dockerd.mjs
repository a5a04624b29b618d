// The real Docker Engine (Debian's docker.io, 20.10) for the Docker backend's tests: a dockerd
// of the test's own on a private socket, with no bridge and no iptables rules (nothing on the
// host's network changes) and its own containerd, stopped and unmounted after. The sandbox
// image comes from Podman (`podman save | POST /images/load`), once per machine: the data root
// that holds it is a cache (CACHE_DIR), reloaded when Podman's image ID changes. One dockerd at
// a time uses the cache: its pid file there is the lock (ctest: RESOURCE_LOCK dockerd).

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { PODMAN_IMAGE, buildImage } from './podman.mjs';
import { sleep, which } from './lib.mjs';

/** The cache of the engine's data root (the loaded image), kept across runs. */
export const CACHE_DIR = process.env.CG_TEST_DOCKERD_CACHE || '/var/lib/cellgate/test-dockerd';
const DATA_ROOT = path.join(CACHE_DIR, 'data');
const PID_FILE = path.join(CACHE_DIR, 'dockerd.pid');
const IMAGE_STAMP = path.join(CACHE_DIR, 'image-id');
const LOCK_WAIT_MS = 300000;

/** Why the real Docker Engine cannot be tried here, or false. */
export const dockerdMissing = () => {
  if (!which('dockerd')) return 'dockerd is not installed (scripts/setup.sh test installs docker.io): the Docker backend cannot be tested on the Docker Engine here';
  if (!which('podman')) return 'podman is not installed: the sandbox image is built and saved with it';
  return false;
};

/**
 * One Engine API call on SOCKET: resolves { status, body (parsed JSON when it is), text }.
 * BODY: a readable stream (sent as a tar: an image load), any other value (sent as JSON), or
 * undefined. OPTS.timeoutMs: the call fails after that long (default: no limit).
 */
export function engineCall(socket, method, pathname, body, { timeoutMs = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const stream = typeof body?.pipe === 'function';
    const json = body !== undefined && !stream ? JSON.stringify(body) : null;
    const headers = stream ? { 'Content-Type': 'application/x-tar' } : json !== null ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) } : {};
    const req = http.request({ socketPath: socket, method, path: `/v1.41${pathname}`, headers }, (res) => {
      let text = '';
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => {
        let parsed = text;
        try { parsed = text ? JSON.parse(text) : null; } catch { /* a stream of JSON lines, or text */ }
        resolve({ status: res.statusCode, body: parsed, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (timeoutMs > 0) req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${pathname}: no answer in ${timeoutMs} ms`)));
    if (stream) body.pipe(req);
    else req.end(json ?? undefined);
  });
}

/** Whether process PID exists. */
export function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

// Waits while another dockerd holds the cache (its pid file names a live process).
async function waitForCache() {
  for (let waited = 0; waited < LOCK_WAIT_MS; waited += 500) {
    const pid = Number(fs.existsSync(PID_FILE) ? fs.readFileSync(PID_FILE, 'utf8').trim() : 0);
    if (!(pid > 0 && alive(pid))) return;
    await sleep(500);
  }
  throw new Error(`another dockerd (pid file ${PID_FILE}) used the cache for ${LOCK_WAIT_MS / 1000} s`);
}

/** Every mount point (of this mount namespace) at or below one of DIRS, deepest first. */
export function mountsBelow(dirs) {
  const points = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((line) => line.split(' ')[4].replace(/\\040/g, ' '));
  return points.filter((p) => dirs.some((d) => p === d || p.startsWith(`${d}/`))).sort((a, b) => b.length - a.length);
}

/** Lazily unmounts every mount point at or below one of DIRS. */
export function unmountBelow(dirs) {
  for (const point of mountsBelow(dirs)) {
    try { execFileSync('umount', ['-l', point], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
}

/** Podman's image ID of the sandbox image. */
export const podmanImageId = () => execFileSync('podman', ['image', 'inspect', '--format', '{{.Id}}', PODMAN_IMAGE], { encoding: 'utf8' }).trim();

/**
 * Loads Podman's sandbox image into the engine on SOCKET unless it holds it already and STAMP
 * (a file) names Podman's current image ID; the previous image goes. OPTS.tar: a file that
 * `podman save` already wrote (several engines load one save), else `podman save` is piped
 * in. Resolves the seconds the load took, or 0 when the engine had the image.
 */
export async function loadImage(socket, stamp, { tar = null, label = 'dockerd' } = {}) {
  const id = podmanImageId();
  const have = await engineCall(socket, 'GET', `/images/${encodeURIComponent(PODMAN_IMAGE)}/json`);
  const had = fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8').trim() : '';
  if (have.status === 200 && had === id) return 0;
  const started = Date.now();
  const save = tar ? null : spawn('podman', ['save', PODMAN_IMAGE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const loaded = await engineCall(socket, 'POST', '/images/load?quiet=1', tar ? fs.createReadStream(tar) : save.stdout);
  if (loaded.status !== 200 || /"error/.test(loaded.text)) throw new Error(`docker load: ${loaded.status} ${loaded.text}`);
  // The previous image, when there was one, goes (its layers are the cache's only other use).
  if (have.status === 200 && have.body?.Id && have.body.Id !== `sha256:${id}`) {
    await engineCall(socket, 'DELETE', `/images/${have.body.Id}?force=1`);
  }
  fs.writeFileSync(stamp, `${id}\n`);
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(`${label}: loaded ${PODMAN_IMAGE} (${id.slice(0, 12)}) in ${seconds.toFixed(1)} s\n`);
  return seconds;
}

/** Removes every container of the engine on SOCKET (those a killed test left in a cached data root). */
export async function removeLeftovers(socket) {
  const list = await engineCall(socket, 'GET', '/containers/json?all=1');
  for (const c of Array.isArray(list.body) ? list.body : []) await engineCall(socket, 'DELETE', `/containers/${c.Id}?force=1&v=1`);
}

/**
 * Starts a dockerd of this test's own (exec root, socket and log in a fresh temp dir; data
 * root in the cache) and brings the sandbox image into it. Returns { socket, args (cellgate's
 * --backend docker flags), engine: 'dockerd', stop() }.
 */
export async function startDockerd() {
  buildImage();
  fs.mkdirSync(CACHE_DIR, { recursive: true, mode: 0o700 });
  await waitForCache();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-dockerd-'));
  const socket = path.join(tmp, 'docker.sock');
  const execRoot = path.join(tmp, 'exec');
  const config = path.join(tmp, 'daemon.json');
  const log = path.join(tmp, 'dockerd.log');
  // Its own empty configuration: a host's /etc/docker/daemon.json is not this test's.
  fs.writeFileSync(config, '{}\n');
  const out = fs.openSync(log, 'a');
  const daemon = spawn('dockerd', [
    '--data-root', DATA_ROOT, '--exec-root', execRoot, '--pidfile', PID_FILE, '--config-file', config,
    '-H', `unix://${socket}`, '--bridge', 'none', '--iptables=false', '--ip6tables=false', '--ip-masq=false',
    '--storage-driver', 'overlay2', '--default-runtime', 'runc', '--log-level', 'warn',
  ], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  let exited = false;
  daemon.once('exit', () => { exited = true; });

  const stop = async () => {
    if (!exited) {
      daemon.kill('SIGTERM');
      for (let i = 0; i < 600 && !exited; i++) await sleep(50);
      if (!exited) daemon.kill('SIGKILL');
      for (let i = 0; i < 100 && !exited; i++) await sleep(50);
    }
    unmountBelow([execRoot, DATA_ROOT]);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  const fail = async (why) => {
    const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
    await stop();
    throw new Error(`dockerd: ${why}\n${tail}`);
  };

  let ping = null;
  for (let i = 0; i < 600 && !exited && ping?.status !== 200; i++) {
    await sleep(100);
    if (fs.existsSync(socket)) ping = await engineCall(socket, 'GET', '/_ping').catch(() => null);
  }
  if (ping?.status !== 200) return fail('did not answer /_ping');
  try {
    await removeLeftovers(socket);
    await loadImage(socket, IMAGE_STAMP, { label: `dockerd (${DATA_ROOT})` });
  } catch (err) {
    return fail(err.message);
  }
  return { socket, engine: 'dockerd', args: ['--backend', 'docker', '--image', PODMAN_IMAGE, '--docker-host', `unix://${socket}`], stop };
}
