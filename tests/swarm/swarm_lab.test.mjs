// The swarm lab's self-test (tests/swarm/swarm_lab.mjs): a real three-node swarm of dockerds
// in network namespaces, one task per node, overlay traffic between nodes and from a worker to
// a listener on the host, a cut node noticed and its task moved, and nothing left after.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { sleep } from '../e2e/lib.mjs';
import { PODMAN_IMAGE, PREFIX, listen, mountsAnywhere, startSwarm, swarmMissing } from './swarm_lab.mjs';

const skip = swarmMissing();
const SERVICE = 'cgsw-probe';
const PORT = 7000;
// Each task: a TCP server that answers a line with its hostname and the line.
const SERVER = `
import os, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', ${PORT})); s.listen(8)
while True:
    c, _ = s.accept(); line = c.recv(200)
    c.sendall(b'task ' + os.uname().nodename.encode() + b' got ' + line); c.close()
`;
// A client run by exec in a task: connects to argv[1]:argv[2], sends a line, prints the answer.
const CLIENT = `
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
c.sendall(sys.argv[3].encode() + b'\\n'); print(c.recv(200).decode().strip())
`;

const ipOut = (...args) => execFileSync('ip', args, { encoding: 'utf8' });
const hostIptables = () => { try { return execFileSync('iptables-save', { encoding: 'utf8' }); } catch { return ''; } };
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function until(what, ms, probe) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got) return got;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(250);
  }
}

describe('swarm lab', { skip }, () => {
  let lab = null;
  let iptablesBefore = '';
  const tasks = async (extra = {}) => {
    const filters = encodeURIComponent(JSON.stringify({ service: [SERVICE], ...extra }));
    return (await lab.engineCall(lab.manager, 'GET', `/tasks?filters=${filters}`)).body;
  };
  const running = async () => (await tasks({ 'desired-state': ['running'] })).filter((t) => t.Status.State === 'running');
  const nodeOf = (task) => lab.nodes.find((n) => n.nodeId === task.NodeID);
  const overlayAddress = (task) => task.NetworksAttachments.find((a) => a.Network.ID === lab.network.id).Addresses[0].split('/')[0];

  before(async () => {
    iptablesBefore = hostIptables();
    lab = await startSwarm({ workers: 2 });
    const t = lab.timings;
    process.stderr.write(`swarm lab: up in ${t.start.toFixed(1)} s (dockerds ${t.daemons.toFixed(1)} s, image ${t.images.toFixed(1)} s`
      + `${t.loaded.length ? `: podman save ${t.save.toFixed(1)} s, loaded into ${t.loaded.join(', ')}` : ', cached'}, swarm ${t.swarm.toFixed(1)} s)\n`);
  });
  after(async () => { await lab?.stop(); });

  test('three nodes ready: one manager and two workers, each at its own address', async () => {
    const list = (await lab.engineCall(lab.manager, 'GET', '/nodes')).body;
    assert.equal(list.length, 3);
    assert.deepEqual(list.map((n) => n.Status.State), ['ready', 'ready', 'ready']);
    assert.deepEqual(list.map((n) => n.Spec.Role).sort(), ['manager', 'worker', 'worker']);
    for (const node of lab.nodes) {
      const seen = list.find((n) => n.ID === node.nodeId);
      assert.ok(seen, `${node.name} is a member`);
      assert.equal(seen.Spec.Role, node.role);
      assert.equal(seen.Status.Addr, node.address);
      assert.equal(seen.Description.Hostname, node.hostname);
    }
    assert.equal(new Set(lab.nodes.map((n) => n.address)).size, 3);
    assert.ok(!lab.nodes.some((n) => n.address === lab.hostAddress));
    assert.match(lab.hostAddress, /^198\.19\.2[0-4]\d\.1$/);
    // The host's namespace has one veth of the lab, with hostAddress.
    const links = ipOut('-o', 'link', 'show').split('\n').filter((l) => l.includes(` ${PREFIX}`));
    assert.equal(links.length, 1, links.join('\n'));
    assert.match(ipOut('-4', '-o', 'addr', 'show'), new RegExp(`${lab.hostAddress.replace(/\./g, '\\.')}/24`));
  });

  test('a service of three replicas gets one task on each node', async () => {
    const made = await lab.engineCall(lab.manager, 'POST', '/services/create', {
      Name: SERVICE,
      TaskTemplate: {
        ContainerSpec: { Image: PODMAN_IMAGE, Command: ['python3', '-c', SERVER] },
        Placement: { Preferences: [{ Spread: { SpreadDescriptor: 'node.id' } }] },
        Networks: [{ Target: lab.network.name }],
        RestartPolicy: { Condition: 'any', Delay: 1000000000 },
      },
      Mode: { Replicated: { Replicas: 3 } },
      // DNS round robin, no virtual IP: a VIP needs IPVS, which this kernel lacks.
      EndpointSpec: { Mode: 'dnsrr' },
    });
    assert.equal(made.status, 201, made.text);
    const t0 = Date.now();
    const up = await until('three running tasks', 180000, async () => { const r = await running(); return r.length === 3 && r; });
    process.stderr.write(`swarm lab: three tasks running ${seconds(Date.now() - t0)} after the service was made\n`);
    assert.deepEqual(up.map((t) => nodeOf(t)?.name).sort(), ['node0', 'node1', 'node2']);
  });

  test('tasks on different nodes reach each other over the overlay, and a worker reaches the host', async () => {
    const up = await running();
    const [a, b] = ['node1', 'node2'].map((name) => up.find((t) => nodeOf(t).name === name));
    const from = a.Status.ContainerStatus.ContainerID;
    const to = overlayAddress(b);
    const over = await lab.exec('node1', from, ['python3', '-c', CLIENT, to, String(PORT), 'hello from node1']);
    assert.equal(over.exitCode, 0, over.output);
    assert.match(over.output, /^task [0-9a-f]{12} got hello from node1/);
    assert.equal(over.output.split(' ')[1], b.Status.ContainerStatus.ContainerID.slice(0, 12));

    const listener = await listen(lab.hostAddress);
    try {
      const out = await lab.exec('node1', from, ['python3', '-c', CLIENT, lab.hostAddress, String(listener.port), 'hello host']);
      assert.equal(out.exitCode, 0, out.output);
      assert.equal(out.output.trim(), `host ${lab.hostAddress}`);
      const got = await listener.accepted;
      assert.equal(got.line, 'hello host');
      // The node's own dockerd NATed the task's gwbridge address to the node's.
      assert.equal(got.from, lab.nodes[1].address);
    } finally {
      await listener.close();
    }
    // Those NAT rules are in the node's namespace; the host's has none of the lab's.
    const nodeRules = execFileSync('ip', ['netns', 'exec', lab.nodes[1].netns, 'iptables-save', '-t', 'nat'], { encoding: 'utf8' });
    assert.match(nodeRules, /MASQUERADE/);
    assert.equal(hostIptables().includes('DOCKER'), iptablesBefore.includes('DOCKER'));
  });

  test('a cut worker is reported down and its task moves; mended, it is ready again', async (t) => {
    const victim = lab.nodes[2];
    const before = (await running()).find((task) => task.NodeID === victim.nodeId);
    assert.ok(before, 'node2 runs a task');
    const t0 = Date.now();
    lab.cut(victim.name);
    await until('node2 down', 120000, async () => (await lab.engineCall(lab.manager, 'GET', `/nodes/${victim.nodeId}`)).body.Status.State === 'down');
    const noticed = Date.now() - t0;
    const moved = await until('the task rescheduled', 120000, async () => {
      const r = await running();
      return r.length === 3 && r.every((task) => task.NodeID !== victim.nodeId) && r;
    });
    const rescheduled = Date.now() - t0;
    t.diagnostic(`cut node2: down after ${seconds(noticed)}, its task running elsewhere after ${seconds(rescheduled)}`);
    process.stderr.write(`swarm lab: cut node2 reported down after ${seconds(noticed)}, task rescheduled after ${seconds(rescheduled)}\n`);
    assert.deepEqual(new Set(moved.map((task) => nodeOf(task).name)), new Set(['node0', 'node1']));

    const t1 = Date.now();
    lab.mend(victim.name);
    await until('node2 ready again', 120000, async () => (await lab.engineCall(lab.manager, 'GET', `/nodes/${victim.nodeId}`)).body.Status.State === 'ready');
    process.stderr.write(`swarm lab: mended node2 ready again after ${seconds(Date.now() - t1)}\n`);
  });

  test('a worker whose dockerd is killed is reported down', async () => {
    const victim = lab.nodes[1];
    const pids = execFileSync('ip', ['netns', 'pids', victim.netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
    assert.ok(pids.length >= 2, 'its dockerd and containerd');
    const t0 = Date.now();
    await lab.stopNode(victim.name);
    assert.deepEqual(pids.filter((p) => fs.existsSync(`/proc/${p}`)), []);
    await until('node1 down', 120000, async () => (await lab.engineCall(lab.manager, 'GET', `/nodes/${victim.nodeId}`)).body.Status.State === 'down');
    process.stderr.write(`swarm lab: node1's dockerd killed, reported down after ${seconds(Date.now() - t0)}\n`);
    assert.equal(execFileSync('ip', ['netns', 'pids', victim.netns], { encoding: 'utf8' }).trim(), '');
  });

  test('stop() leaves no namespace, veth, daemon, mount or temp dir', async () => {
    const pids = lab.daemonPids();
    assert.ok(pids.length >= 4, `dockerd and containerd of each live node: ${pids}`);
    const dirs = [lab.tmp, ...lab.nodes.map((n) => n.dataRoot), ...lab.nodes.map((n) => n.execRoot)];
    const t0 = Date.now();
    await lab.stop();
    process.stderr.write(`swarm lab: stopped in ${seconds(Date.now() - t0)}\n`);
    await lab.stop(); // idempotent
    assert.deepEqual(ipOut('netns', 'list').split('\n').filter((l) => l.startsWith(PREFIX)), []);
    assert.deepEqual(ipOut('-o', 'link', 'show').split('\n').filter((l) => l.includes(` ${PREFIX}`)), []);
    assert.ok(!ipOut('-4', '-o', 'addr', 'show').includes(`${lab.hostAddress}/`));
    const alive = pids.filter((p) => fs.existsSync(`/proc/${p}`));
    assert.deepEqual(alive, []);
    const daemons = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((p) => {
      try { return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(lab.tmp); } catch { return false; }
    });
    assert.deepEqual(daemons, [], 'no process of the lab (dockerd, containerd, shims)');
    assert.deepEqual(mountsAnywhere(dirs), []);
    assert.ok(!fs.existsSync(lab.tmp));
    for (const root of ['/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids', '/sys/fs/cgroup']) {
      if (fs.existsSync(root)) assert.deepEqual(fs.readdirSync(root).filter((e) => e.startsWith(PREFIX)), [], root);
    }
    assert.equal(hostIptables().includes('DOCKER'), iptablesBefore.includes('DOCKER'));
  });
});
