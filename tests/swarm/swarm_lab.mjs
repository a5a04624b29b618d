// A real Docker Swarm on this machine for the swarm backend's tests (issue 31): one manager and
// N workers, each a dockerd of Debian's docker.io (20.10) in a network namespace of its own,
// joined by veth pairs to a Linux bridge in a "switch" namespace; the host's namespace gets
// one veth into that switch (hostAddress), so that a server on the host can be reached from
// the sandboxes. Every address is in 198.19.0.0/16 (RFC 2544, never routed; tests/netlab has
// 198.18.x): the lab's link 198.19.<200+slot>.0/24 (host .1, node i .10+i), the swarm's
// overlays from 198.19.128.0/18, each node's docker_gwbridge from 198.19.64.0/18 (NATed by
// the node's own dockerd, in its own namespace, to the node's address).
//
// Each node's data root is a cache (CACHE_DIR/node<i>/data) holding the sandbox image loaded
// from Podman once (`podman save`, `POST /images/load`), again only when Podman's image ID
// changes; its swarm and network state are wiped before each start. One lab at a time uses
// the cache: CACHE_DIR/lab.pid (created O_EXCL) names its owner (ctest: RESOURCE_LOCK swarm).
// `node swarm_lab.mjs gc` (and every startSwarm) takes down the labs of dead owners.

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { alive, engineCall as callSocket, loadImage, mountsBelow, podmanImageId, removeLeftovers, unmountBelow } from '../e2e/dockerd.mjs';
import { PODMAN_IMAGE, buildImage } from '../e2e/podman.mjs';
import { sleep, which } from '../e2e/lib.mjs';

export { PODMAN_IMAGE };
/** The node data roots' cache (the loaded image), kept across runs. */
export const CACHE_DIR = process.env.CG_TEST_SWARM_CACHE || '/var/lib/cellgate/test-swarm';
/** Every namespace, host veth and cgroup of a lab starts with this, then the owner's pid. */
export const PREFIX = 'cgsw-';
const LOCK_FILE = path.join(CACHE_DIR, 'lab.pid');
const LOCK_WAIT_MS = 600000;
const OVERLAY_POOL = '198.19.128.0/18';
const LOCAL_POOL = 'base=198.19.64.0/18,size=24';
const SLOTS = 50; // 198.19.200.0/24 .. 198.19.249.0/24

/** Why the lab cannot run here, or false. */
export function swarmMissing() {
  if (process.getuid() !== 0) return 'the swarm lab needs root (network namespaces, dockerd)';
  if (!which('dockerd')) return 'dockerd is not installed (scripts/setup.sh test installs docker.io)';
  if (!which('podman')) return 'podman is not installed: the sandbox image is saved from it';
  for (const tool of ['ip', 'nsenter', 'unshare', 'iptables']) if (!which(tool)) return `${tool} is not installed`;
  return false;
}

const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
const tryIp = (...args) => { try { return ip(...args); } catch { return ''; } };
const netnsList = () => tryIp('netns', 'list').split('\n').map((l) => l.split(' ')[0]).filter(Boolean);
const netnsPids = (ns) => tryIp('netns', 'pids', ns).split('\n').map(Number).filter((p) => p > 0);

// The v1 hierarchies' or the v2 root's mount points (for the nodes' --cgroup-parent dirs).
function cgroupRoots() {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => / - cgroup2? /.test(l))
    .map((l) => l.split(' ')[4]);
}

// Kills every process in the cgroups named NAME (in every hierarchy), then removes them.
function killCgroups(name) {
  for (let round = 0; round < 20; round++) {
    let left = 0;
    for (const root of cgroupRoots()) {
      const top = path.join(root, name);
      if (!fs.existsSync(top)) continue;
      const dirs = [];
      const walk = (d) => { dirs.push(d); for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name)); };
      try { walk(top); } catch { continue; }
      for (const d of dirs.reverse()) {
        let procs = [];
        try { procs = fs.readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n').map(Number).filter((p) => p > 0); } catch {}
        for (const p of procs) { try { process.kill(p, 'SIGKILL'); } catch {} }
        try { fs.rmdirSync(d); } catch { left++; }
      }
    }
    if (!left) return;
    execFileSync('sleep', ['0.1']);
  }
}

function killPids(pids) {
  for (const p of pids) { try { process.kill(p, 'SIGKILL'); } catch {} }
}

const waitGone = async (pids, ms) => {
  for (let waited = 0; waited < ms && pids.some(alive); waited += 100) await sleep(100);
};

/**
 * Takes down the lab of owner OWNER (a pid) as far as it is there: every process in its node
 * and switch namespaces and in its nodes' cgroups killed, its host veth and namespaces
 * deleted, its temp dir removed, its lock released. What stop() falls back on, and gc.
 */
async function teardown(owner) {
  const tag = `${PREFIX}${owner}`;
  const spaces = netnsList().filter((n) => n.startsWith(`${tag}-`));
  const pids = spaces.flatMap(netnsPids);
  killPids(pids);
  await waitGone(pids, 5000);
  for (const ns of spaces) if (/-n\d+$/.test(ns)) killCgroups(ns);
  tryIp('link', 'del', tag);
  for (const ns of spaces) tryIp('netns', 'del', ns);
  const tmp = path.join(os.tmpdir(), `cg-swarm-${owner}`);
  unmountBelow([tmp]);
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    if (Number(fs.readFileSync(LOCK_FILE, 'utf8').trim()) === Number(owner)) fs.rmSync(LOCK_FILE, { force: true });
  } catch {}
}

/** Takes down every lab whose owner process is gone (a test killed before its stop()); resolves their owners. */
export async function gc() {
  const owners = new Set();
  for (const ns of netnsList()) {
    const m = ns.match(new RegExp(`^${PREFIX}(\\d+)-`));
    if (m && !alive(Number(m[1]))) owners.add(m[1]);
  }
  for (const line of tryIp('-o', 'link', 'show').split('\n')) {
    const m = line.match(new RegExp(`^\\d+: ${PREFIX}(\\d+)[@:]`));
    if (m && !alive(Number(m[1]))) owners.add(m[1]);
  }
  for (const e of fs.existsSync(os.tmpdir()) ? fs.readdirSync(os.tmpdir()) : []) {
    const m = e.match(/^cg-swarm-(\d+)$/);
    if (m && !alive(Number(m[1]))) owners.add(m[1]);
  }
  for (const owner of owners) await teardown(owner);
  return [...owners];
}

// Takes the cache's lock (CACHE_DIR/lab.pid, O_EXCL), waiting while a live lab holds it.
async function lock() {
  fs.mkdirSync(CACHE_DIR, { recursive: true, mode: 0o700 });
  for (let waited = 0; waited < LOCK_WAIT_MS; waited += 500) {
    try {
      fs.writeFileSync(LOCK_FILE, `${process.pid}\n`, { flag: 'wx' });
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const owner = Number((() => { try { return fs.readFileSync(LOCK_FILE, 'utf8').trim(); } catch { return 0; } })());
    if (owner === process.pid) throw new Error('this process runs a swarm lab already');
    if (!(owner > 0 && alive(owner))) fs.rmSync(LOCK_FILE, { force: true });
    else await sleep(500);
  }
  throw new Error(`another swarm lab (${LOCK_FILE}) held the cache for ${LOCK_WAIT_MS / 1000} s`);
}

// The first 198.19.<200+slot>.0/24 that no address or route of the host's namespace uses.
function freeSlot() {
  const used = tryIp('-4', '-o', 'addr', 'show') + tryIp('-4', 'route', 'show', 'table', 'all');
  for (let slot = 0; slot < SLOTS; slot++) if (!used.includes(`198.19.${200 + slot}.`)) return slot;
  throw new Error('no free 198.19.200-249.0/24 block for a swarm lab');
}

/**
 * Starts a swarm of one manager and WORKERS workers. Resolves { manager, nodes, hostAddress,
 * network: { name, id } (an attachable overlay), engineCall(node, method, path, body, opts),
 * exec(node, container, cmd) -> { exitCode, output }, cut(name), mend(name), stopNode(name),
 * stop(), timings }. A node: { name, role, address, socket, netns, nodeId, hostname }.
 */
export async function startSwarm({ workers = 2 } = {}) {
  const missing = swarmMissing();
  if (missing) throw new Error(missing);
  buildImage();
  await gc();
  await lock();
  const owner = process.pid;
  const tag = `${PREFIX}${owner}`;
  const tmp = path.join(os.tmpdir(), `cg-swarm-${owner}`);
  const timings = {};
  const started = Date.now();
  const daemons = new Map(); // name -> { child, exited }
  const nodes = [];
  let stopped = false;
  let slot;

  const byName = (node) => {
    const found = typeof node === 'string' ? nodes.find((n) => n.name === node) : node;
    if (!found) throw new Error(`no node ${node} in this lab`);
    return found;
  };
  const engineCall = (node, method, pathname, body, opts) => callSocket(byName(node).socket, method, pathname, body, opts);

  const stopDaemon = async (node, signal) => {
    const d = daemons.get(node.name);
    if (d && !d.exited) {
      d.child.kill(signal);
      for (let i = 0; i < 400 && !d.exited; i++) await sleep(50);
      if (!d.exited) d.child.kill('SIGKILL');
      for (let i = 0; i < 100 && !d.exited; i++) await sleep(50);
    }
    // containerd, the shims and the containers (in the node's cgroups) outlive a killed dockerd.
    const pids = netnsPids(node.netns);
    killPids(pids);
    await waitGone(pids, 5000);
    killCgroups(node.netns);
  };

  let stop = async () => {
    if (stopped) return;
    stopped = true;
    const t0 = Date.now();
    const quick = { timeoutMs: 10000 };
    const live = nodes.filter((n) => daemons.get(n.name) && !daemons.get(n.name).exited);
    try {
      const manager = live.find((n) => n.role === 'manager');
      if (manager) {
        const services = await engineCall(manager, 'GET', '/services', undefined, quick).catch(() => null);
        for (const s of Array.isArray(services?.body) ? services.body : []) await engineCall(manager, 'DELETE', `/services/${s.ID}`, undefined, quick).catch(() => {});
      }
      await Promise.all(live.map(async (n) => {
        await removeLeftovers(n.socket).catch(() => {});
        await engineCall(n, 'POST', '/swarm/leave?force=1', undefined, quick).catch(() => {});
      }));
    } catch { /* the daemons are stopped all the same */ }
    await Promise.all(nodes.map((n) => stopDaemon(n, 'SIGTERM')));
    unmountBelow([tmp, ...nodes.map((n) => n.dataRoot)]);
    await teardown(owner);
    timings.stop = (Date.now() - t0) / 1000;
  };

  // A test runner's SIGTERM or a ^C takes the lab down before the process goes (a SIGKILL
  // leaves it to the next start's gc).
  const onSignal = (signal) => { stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143)); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const stopOnce = stop;
  stop = async () => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await stopOnce();
  };

  try {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { mode: 0o700 });
    slot = freeSlot();
    const net24 = `198.19.${200 + slot}`;
    const hostAddress = `${net24}.1`;

    // The switch: a bridge in a namespace of its own; the host's end of its veth.
    const sw = `${tag}-sw`;
    ip('netns', 'add', sw);
    ip('-n', sw, 'link', 'set', 'lo', 'up');
    ip('-n', sw, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', sw, 'link', 'set', 'br0', 'up');
    ip('link', 'add', tag, 'type', 'veth', 'peer', 'name', 'host', 'netns', sw);
    ip('-n', sw, 'link', 'set', 'host', 'master', 'br0', 'up');
    ip('addr', 'add', `${hostAddress}/24`, 'dev', tag);
    ip('link', 'set', tag, 'up');

    for (let i = 0; i <= workers; i++) {
      const name = `node${i}`;
      const ns = `${tag}-n${i}`;
      const address = `${net24}.${10 + i}`;
      ip('netns', 'add', ns);
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip('-n', sw, 'link', 'add', `p${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      ip('-n', sw, 'link', 'set', `p${i}`, 'master', 'br0', 'up');
      ip('-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      const cache = path.join(CACHE_DIR, name);
      const dataRoot = path.join(cache, 'data');
      fs.mkdirSync(dataRoot, { recursive: true, mode: 0o700 });
      // A killed run's swarm membership and networks go; the image stays.
      for (const stale of ['swarm', 'network']) fs.rmSync(path.join(dataRoot, stale), { recursive: true, force: true });
      nodes.push({
        name, role: i === 0 ? 'manager' : 'worker', address, netns: ns, nodeId: null, hostname: `${tag}-${name}`,
        socket: path.join(tmp, `${name}.sock`), dataRoot, execRoot: path.join(tmp, `exec${i}`), cache, port: `p${i}`,
        log: path.join(tmp, `${name}.log`),
      });
    }

    // One dockerd per node, in the node's network namespace (nsenter) and in a mount and UTS
    // namespace of its own (unshare): a fresh sysfs for that network namespace with the host's
    // cgroup hierarchies bound back under it (`ip netns exec` would drop them), a hostname.
    for (const node of nodes) {
      const i = nodes.indexOf(node);
      const config = path.join(tmp, `daemon${i}.json`);
      // The engine ID comes from this key (the default, /etc/docker/key.json, would give every node the same).
      fs.writeFileSync(config, `${JSON.stringify({ 'deprecated-key-path': path.join(node.cache, 'key.json') })}\n`);
      const cg = path.join(tmp, `cgroup${i}`);
      fs.mkdirSync(cg);
      const args = [
        '--data-root', node.dataRoot, '--exec-root', node.execRoot, '--pidfile', path.join(tmp, `${node.name}.pid`),
        '--config-file', config, '-H', `unix://${node.socket}`,
        '--bridge', 'none', '--iptables=true', '--ip-masq=true', '--ip6tables=false', '--ipv6=false',
        '--default-address-pool', LOCAL_POOL, '--cgroup-parent', `/${node.netns}`,
        '--storage-driver', 'overlay2', '--default-runtime', 'runc', '--log-level', 'warn',
      ];
      const script = 'set -e; hostname "$1"; mount --rbind /sys/fs/cgroup "$2"; umount -l /sys; mount -t sysfs sysfs /sys; '
        + 'mount --move "$2" /sys/fs/cgroup; shift 2; exec dockerd "$@"';
      const out = fs.openSync(node.log, 'a');
      const child = spawn('nsenter', [`--net=/run/netns/${node.netns}`, 'unshare', '--mount', '--uts', '--propagation', 'slave',
        'sh', '-c', script, 'sh', node.hostname, cg, ...args], { stdio: ['ignore', out, out] });
      fs.closeSync(out);
      const d = { child, exited: false };
      child.once('exit', () => { d.exited = true; });
      daemons.set(node.name, d);
    }
    const tail = (node) => (fs.existsSync(node.log) ? fs.readFileSync(node.log, 'utf8').split('\n').slice(-15).join('\n') : '');
    await Promise.all(nodes.map(async (node) => {
      let ping = null;
      for (let i = 0; i < 600 && !daemons.get(node.name).exited && ping?.status !== 200; i++) {
        await sleep(100);
        if (fs.existsSync(node.socket)) ping = await callSocket(node.socket, 'GET', '/_ping').catch(() => null);
      }
      if (ping?.status !== 200) throw new Error(`${node.name}'s dockerd did not answer /_ping\n${tail(node)}`);
      await removeLeftovers(node.socket);
    }));
    timings.daemons = (Date.now() - started) / 1000;

    // The image: one `podman save` for every node that lacks it, loaded into each.
    const t1 = Date.now();
    const id = podmanImageId();
    const need = [];
    for (const node of nodes) {
      const stamp = path.join(node.cache, 'image-id');
      const have = await callSocket(node.socket, 'GET', `/images/${encodeURIComponent(PODMAN_IMAGE)}/json`);
      const had = fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8').trim() : '';
      if (!(have.status === 200 && had === id)) need.push(node);
    }
    if (need.length) {
      const tar = path.join(CACHE_DIR, 'image.tar');
      fs.rmSync(tar, { force: true });
      execFileSync('podman', ['save', '-q', '-o', tar, PODMAN_IMAGE], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 1200000 });
      timings.save = (Date.now() - t1) / 1000;
      try {
        for (const node of need) await loadImage(node.socket, path.join(node.cache, 'image-id'), { tar, label: `swarm lab ${node.name}` });
      } finally {
        fs.rmSync(tar, { force: true });
      }
    }
    timings.images = (Date.now() - t1) / 1000;
    timings.loaded = need.map((n) => n.name);

    // The swarm: init on the manager, the workers join with the worker token.
    const t2 = Date.now();
    const [manager, ...rest] = nodes;
    const init = await engineCall(manager, 'POST', '/swarm/init', {
      ListenAddr: `${manager.address}:2377`, AdvertiseAddr: `${manager.address}:2377`, DataPathAddr: manager.address,
      DefaultAddrPool: [OVERLAY_POOL], SubnetSize: 24,
    });
    if (init.status !== 200) throw new Error(`swarm init: ${init.status} ${init.text}`);
    manager.nodeId = init.body;
    const swarm = await engineCall(manager, 'GET', '/swarm');
    const token = swarm.body.JoinTokens.Worker;
    for (const node of rest) {
      const joined = await engineCall(node, 'POST', '/swarm/join', {
        ListenAddr: `${node.address}:2377`, AdvertiseAddr: `${node.address}:2377`, DataPathAddr: node.address,
        RemoteAddrs: [`${manager.address}:2377`], JoinToken: token,
      });
      if (joined.status !== 200) throw new Error(`${node.name}: swarm join: ${joined.status} ${joined.text}\n${tail(node)}`);
      const info = await engineCall(node, 'GET', '/info');
      node.nodeId = info.body.Swarm.NodeID;
    }
    let list = [];
    for (let i = 0; i < 600; i++) {
      list = (await engineCall(manager, 'GET', '/nodes')).body;
      if (Array.isArray(list) && list.length === nodes.length && list.every((n) => n.Status.State === 'ready')) break;
      await sleep(100);
    }
    if (!(list.length === nodes.length && list.every((n) => n.Status.State === 'ready'))) {
      throw new Error(`the swarm's nodes did not all become ready: ${JSON.stringify(list.map((n) => [n.ID, n.Status]))}`);
    }
    // No routing mesh: its ingress network (IPVS, which this kernel lacks) goes.
    await engineCall(manager, 'DELETE', '/networks/ingress');
    const name = `${tag}-overlay`;
    const made = await engineCall(manager, 'POST', '/networks/create', { Name: name, Driver: 'overlay', Attachable: true, CheckDuplicate: true });
    if (made.status !== 201) throw new Error(`overlay network: ${made.status} ${made.text}`);
    timings.swarm = (Date.now() - t2) / 1000;
    timings.start = (Date.now() - started) / 1000;

    const exec = async (node, container, cmd, { timeoutMs = 60000 } = {}) => {
      const made = await engineCall(node, 'POST', `/containers/${container}/exec`, { AttachStdout: true, AttachStderr: true, Tty: true, Cmd: cmd });
      if (made.status !== 201) throw new Error(`exec: ${made.status} ${made.text}`);
      const run = await engineCall(node, 'POST', `/exec/${made.body.Id}/start`, { Detach: false, Tty: true }, { timeoutMs });
      const info = await engineCall(node, 'GET', `/exec/${made.body.Id}/json`);
      return { exitCode: info.body.ExitCode, output: run.text };
    };
    const link = (node, state) => ip('-n', sw, 'link', 'set', byName(node).port, state);

    return {
      manager, nodes, hostAddress, network: { name, id: made.body.Id }, tmp, timings,
      engineCall, exec,
      /** Takes NODE's link to the switch down: the node is cut off from every other. */
      cut: (node) => link(node, 'down'),
      mend: (node) => link(node, 'up'),
      /** Kills NODE's dockerd, its containerd and its containers (a node that died). */
      stopNode: (node) => stopDaemon(byName(node), 'SIGKILL'),
      daemonPids: () => nodes.flatMap((n) => netnsPids(n.netns)),
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

// The mount points of every process's mount namespace at or below one of DIRS.
export function mountsAnywhere(dirs) {
  const found = new Set(mountsBelow(dirs));
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let text = '';
    try { text = fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8'); } catch { continue; }
    for (const line of text.split('\n')) {
      const point = line.split(' ')[4];
      if (point && dirs.some((d) => point === d || point.startsWith(`${d}/`))) found.add(point);
    }
  }
  return [...found];
}

/** A TCP listener at ADDRESS in the host's namespace: { port, accepted (a promise of the first connection's first line), close() }. */
export function listen(address) {
  return new Promise((resolve, reject) => {
    let got;
    const accepted = new Promise((r) => { got = r; });
    const server = net.createServer((conn) => {
      let text = '';
      conn.on('data', (chunk) => {
        text += chunk;
        if (text.includes('\n')) { conn.end(`host ${address}\n`); got({ line: text.trim(), from: conn.remoteAddress }); }
      });
      conn.on('error', () => {});
    });
    server.once('error', reject);
    server.listen(0, address, () => resolve({ port: server.address().port, accepted, close: () => new Promise((r) => server.close(r)) }));
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === 'gc') {
    const owners = await gc();
    process.stdout.write(owners.length ? `removed the labs of dead owners ${owners.join(', ')}\n` : 'no lab to remove\n');
  } else {
    process.stderr.write('usage: node tests/swarm/swarm_lab.mjs gc\n');
    process.exit(2);
  }
}
