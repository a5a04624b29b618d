// The server image (Dockerfile, scripts/build-server-image.sh) run as a container of the
// engine its sandboxes come from (the sibling-container pattern, docs/deploy.md), for one
// engine: Podman's Docker-compatible service or a dockerd of the test's own. An official MCP
// SDK client reaches it over Streamable HTTP with its bearer token and runs Python,
// JavaScript and bash with state kept; the sandboxes are the engine's containers, siblings
// of the server's, labelled app=cellgate and with the client's session id. A server container
// without the same-path bind of its state dir refuses to start and says why.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { engineCall } from './dockerd.mjs';
import { REPO_ROOT, sleep } from './lib.mjs';
import { PODMAN_IMAGE } from './podman.mjs';

export const SERVER_IMAGE = process.env.CG_TEST_SERVER_IMAGE || 'localhost/cellgate:latest';

// Builds the server image (cached by its stamp).
function buildServerImage() {
  execFileSync(path.join(REPO_ROOT, 'scripts', 'build-server-image.sh'), ['--image', SERVER_IMAGE], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 1800000 });
}

// Brings the server image into a dockerd (podman save | POST /images/load) unless it holds
// the same image ID.
async function loadServerImage(socket) {
  const id = execFileSync('podman', ['image', 'inspect', '--format', '{{.Id}}', SERVER_IMAGE], { encoding: 'utf8' }).trim();
  const have = await engineCall(socket, 'GET', `/images/${encodeURIComponent(SERVER_IMAGE)}/json`);
  if (have.status === 200 && have.body?.Id === `sha256:${id}`) return;
  const save = spawn('podman', ['save', SERVER_IMAGE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const loaded = await engineCall(socket, 'POST', '/images/load?quiet=1', save.stdout);
  if (loaded.status !== 200 || /"error/.test(loaded.text)) throw new Error(`docker load: ${loaded.status} ${loaded.text}`);
}

// One Engine API call on SOCKET with a JSON BODY: resolves { status, body, text }.
function api(socket, method, pathname, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const headers = data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {};
    const req = http.request({ socketPath: socket, method, path: `/v1.41${pathname}`, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed = null;
        try { parsed = text ? JSON.parse(text) : null; } catch { /* a log stream */ }
        resolve({ status: res.statusCode, body: parsed, text });
      });
    });
    req.on('error', reject);
    req.end(data ?? undefined);
  });
}

// A free TCP port on loopback (the server container shares the host's network).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

// The hard limits this process has, which the engine's runc cannot exceed for a container:
// RLIMIT_NOFILE, and RLIMIT_NPROC at most pid_max (Podman as root asks for more otherwise).
function ulimits() {
  const limits = fs.readFileSync('/proc/self/limits', 'utf8');
  const hard = (name, fallback) => {
    const m = limits.match(new RegExp(`^${name}\\s+\\S+\\s+(\\S+)`, 'm'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : fallback;
  };
  const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  const nofile = hard('Max open files', 65536);
  const nproc = Math.min(hard('Max processes', pidMax), pidMax);
  return [{ Name: 'nofile', Soft: nofile, Hard: nofile }, { Name: 'nproc', Soft: nproc, Hard: nproc }];
}

// Creates and starts the server's container on the engine at SOCKET (ENGINE: podman or
// dockerd): the engine's socket at /var/run/docker.sock, the host's network, pid namespace
// and cgroups, and what mounting the sessions' disks takes. Podman: privileged. Docker refuses
// --privileged on a host whose capability bounding set lacks one it knows ("unable to apply
// caps": this machine lacks CAP_SYS_RESOURCE), so there: CAP_SYS_ADMIN, CAP_SYS_NICE
// (renice), the host's /dev for the loop devices the server attaches and their device numbers,
// no seccomp or AppArmor filter of mount (Podman's compatible API takes no device cgroup
// rules). With BINDS and ENV. Returns its id.
async function runServer(socket, engine, name, { binds, env }) {
  const rights = engine === 'podman'
    ? { Privileged: true }
    : {
        CapAdd: ['SYS_ADMIN', 'SYS_NICE'],
        SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined'],
        DeviceCgroupRules: ['b 7:* rmw', 'c 10:237 rmw'],
      };
  const body = {
    Image: SERVER_IMAGE,
    Env: [`CELLGATE_IMAGE=${PODMAN_IMAGE}`, 'CELLGATE_LOG_LEVEL=info', ...env],
    Labels: { 'org.cellgate.e2e': 'server' },
    HostConfig: {
      NetworkMode: 'host', PidMode: 'host', CgroupnsMode: 'host', ...rights,
      Binds: [`${socket}:/var/run/docker.sock`, '/sys/fs/cgroup:/sys/fs/cgroup', ...(engine === 'podman' ? [] : ['/dev:/dev']), ...binds],
      Ulimits: ulimits(),
    },
  };
  const created = await api(socket, 'POST', `/containers/create?name=${name}`, body);
  assert.equal(created.status, 201, `create ${name}: ${created.text}`);
  const started = await api(socket, 'POST', `/containers/${created.body.Id}/start`);
  assert.equal(started.status, 204, `start ${name}: ${started.text}`);
  return created.body.Id;
}

// The container's log (stdout and stderr, the engine's frame headers left in).
async function logs(socket, id) {
  return (await api(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).text ?? '';
}

async function inspect(socket, id) {
  return (await api(socket, 'GET', `/containers/${id}/json`)).body;
}

async function remove(socket, id) {
  await api(socket, 'POST', `/containers/${id}/stop?t=30`);
  await api(socket, 'DELETE', `/containers/${id}?force=1&v=1`);
}

/** The suite for one engine: START() resolves { socket, engine, stop() }. */
export function serverImageSuite(engine, { skip, start }) {
  let eng;
  let state;
  let serverId;
  let client;
  const token = crypto.randomBytes(24).toString('hex');
  const session = `image-${crypto.randomBytes(4).toString('hex')}`;
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  const run = async (language, code) => {
    const result = await call('execute_code', { language, code, session_id: session });
    assert.equal(result.structuredContent?.status, 'success', JSON.stringify(result.structuredContent).slice(0, 2000));
    return result.structuredContent.stdout;
  };

  before(async () => {
    if (skip) return;
    eng = await start();
    const built = Date.now();
    buildServerImage();
    if (engine === 'dockerd') await loadServerImage(eng.socket);
    process.stderr.write(`server image ${SERVER_IMAGE} ready in ${((Date.now() - built) / 1000).toFixed(1)} s\n`);
    // The same-path rule: the state dir bound at its own path, as a shared mount so that the
    // sessions' disks the server mounts below it reach the engine's host.
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-srv-'));
    execFileSync('mount', ['--bind', state, state]);
    execFileSync('mount', ['--make-shared', state]);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const began = Date.now();
    serverId = await runServer(eng.socket, engine, `cg-e2e-server-${crypto.randomBytes(4).toString('hex')}`, {
      binds: [`${state}:${state}:rshared`],
      env: [`CELLGATE_STATE_DIR=${state}`, `CELLGATE_HTTP=127.0.0.1:${port}`, `CELLGATE_HTTP_TOKEN=${token}`, `CELLGATE_PUBLIC_URL=${url}`],
    });
    let lastError;
    for (let i = 0; i < 600 && !client; i++) {
      const c = new Client({ name: 'cellgate-e2e-image', version: '0.0.0' }, { capabilities: {} });
      const t = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
      try {
        await c.connect(t, { timeout: 10000 });
        client = c;
      } catch (err) {
        lastError = err;
        const s = await inspect(eng.socket, serverId);
        if (!s?.State?.Running) throw new Error(`the server container exited (${s?.State?.ExitCode}):\n${await logs(eng.socket, serverId)}`);
        await sleep(100);
      }
    }
    if (!client) throw new Error(`no MCP answer from the server container: ${lastError?.message}\n${await logs(eng.socket, serverId)}`);
    process.stderr.write(`${engine}: server container start to first MCP answer (initialize): ${((Date.now() - began) / 1000).toFixed(2)} s\n`);
  });

  after(async () => {
    await client?.close().catch(() => {});
    if (serverId) {
      const text = await logs(eng.socket, serverId);
      const probe = text.match(/docker bind probe: [^\n]*/);
      if (probe) process.stderr.write(`${probe[0]}\n`);
      // What went wrong in the server, when anything did.
      const bad = text.split('\n').filter((line) => / cellgate (error|warn): /.test(line)).slice(-20);
      if (bad.length) process.stderr.write(`--- the server's warnings and errors ---\n${bad.join('\n')}\n`);
      await remove(eng.socket, serverId);
      // The server removes its sandboxes as it stops; any left (a CI run once left four,
      // not seen since) are said, with the server's log tail, and removed.
      const filter = encodeURIComponent(JSON.stringify({ label: [`org.cellgate.state=${state}`] }));
      const left = (await api(eng.socket, 'GET', `/containers/json?all=1&filters=${filter}`)).body ?? [];
      if (left.length) {
        process.stderr.write(`--- ${engine}: the stopped server left ${left.length} sandbox(es): ${left.map((c) => `${c.Names?.[0]} ${c.Labels?.['org.cellgate.kind']} ${c.State}`).join(', ')}; its log's tail:\n${text.slice(-4000)}\n`);
        for (const c of left) await api(eng.socket, 'DELETE', `/containers/${c.Id}?force=1&v=1`);
      }
    }
    if (state) {
      try { execFileSync('umount', ['-l', state]); } catch { /* not mounted */ }
      const left = fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${state}/`);
      if (!left) fs.rmSync(state, { recursive: true, force: true });
    }
    await eng?.stop();
  });

  test(`${engine}: the server image serves MCP over HTTP with its token and runs Python, JavaScript and bash with state kept`, { skip }, async () => {
    assert.equal((await run('python', 'x = 41')).trim(), '');
    assert.equal((await run('python', 'print(x + 1)')).trim(), '42');
    await run('javascript', 'let y = 20');
    assert.equal((await run('javascript', 'console.log(y + 1)')).trim(), '21');
    await run('bash', 'echo from-bash > /mnt/data/note.txt');
    assert.equal((await run('python', 'print(open("/mnt/data/note.txt").read().strip(), x)')).trim(), 'from-bash 41');
    assert.equal((await run('bash', 'cat note.txt; pwd')).trim(), 'from-bash\n/mnt/data');
  });

  test(`${engine}: the sandboxes are the engine's containers, siblings of the server's, labelled with the session's id`, { skip }, async () => {
    const filter = (labels) => encodeURIComponent(JSON.stringify({ label: labels }));
    const all = (await api(eng.socket, 'GET', `/containers/json?filters=${filter(['app=cellgate'])}`)).body;
    const server = await inspect(eng.socket, serverId);
    assert.ok(all.length >= 1, 'no app=cellgate container');
    assert.ok(!all.some((c) => c.Id === serverId), 'the server container carries app=cellgate');
    const mine = (await api(eng.socket, 'GET', `/containers/json?filters=${filter(['app=cellgate', `session_id=${session}`])}`)).body;
    assert.equal(mine.length, 1, `session_id=${session}: ${JSON.stringify(all.map((c) => c.Labels))}`);
    const sandbox = await inspect(eng.socket, mine[0].Id);
    assert.equal(sandbox.HostConfig.NetworkMode, 'none');
    assert.ok(sandbox.HostConfig.Binds.some((b) => b.startsWith(`${state}/`)), JSON.stringify(sandbox.HostConfig.Binds));
    assert.ok(!sandbox.HostConfig.Binds.some((b) => b.includes(':/opt/cellgate/kernels')), 'the image\'s kernels serve: no kernels dir is bound');
    assert.equal(server.HostConfig.PidMode, 'host');
  });

  test(`${engine}: a server container without the same-path bind of its state dir refuses to start and says how to fix it`, { skip }, async () => {
    const unbound = `/var/lib/cellgate-e2e-${crypto.randomBytes(4).toString('hex')}`;
    const id = await runServer(eng.socket, engine, `cg-e2e-unbound-${crypto.randomBytes(4).toString('hex')}`, {
      binds: [],
      env: [`CELLGATE_STATE_DIR=${unbound}`, 'CELLGATE_HTTP=127.0.0.1:0', `CELLGATE_HTTP_TOKEN=${token}`],
    });
    try {
      let s = await inspect(eng.socket, id);
      for (let i = 0; i < 1200 && s?.State?.Running; i++) {
        await sleep(100);
        s = await inspect(eng.socket, id);
      }
      const text = await logs(eng.socket, id);
      assert.equal(s?.State?.Running, false, `the server serves without the bind:\n${text}`);
      assert.notEqual(s?.State?.ExitCode, 0, text);
      assert.match(text, /does not see this server's state dir/);
      assert.ok(text.includes(`-v ${unbound}:${unbound}:rshared`), text);
    } finally {
      await api(eng.socket, 'DELETE', `/containers/${id}?force=1&v=1`);
      // Docker makes a missing bind source on its host: the probe's, empty.
      try { fs.rmdirSync(unbound); } catch { /* Podman refuses instead */ }
    }
  });
}
