// The relay on a remote node of a real swarm (issue 31): a hub on the host's lab address
// (tests/unit/test_remote_relay --remote, which drives it as unit_remote_relay does), and a
// Swarm service on a worker running the sandbox image with `cellgate-relay` as its command.
// The relay's key pair is a Docker secret (root's, 0400), the relay binary a Docker config:
// the server's own build, so relay and server speak one protocol version. The relay dials
// out over the node's network; nothing listens in the task. The hub then runs a real
// ipykernel there as the image's sandbox user, in a network namespace with only lo, that
// cannot read the key; kills it; and ends the relay.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { serverBinary, sleep } from '../e2e/lib.mjs';
import { PODMAN_IMAGE, startSwarm, swarmMissing } from './swarm_lab.mjs';

const BUILD = path.dirname(serverBinary());
const RELAY = path.join(BUILD, 'cellgate-relay');
const PROBE = path.join(BUILD, 'tests', 'test_remote_relay');
const missing = swarmMissing()
  || (!fs.existsSync(RELAY) && `${RELAY} is not built`)
  || (!fs.existsSync(PROBE) && `${PROBE} is not built`);
const SANDBOX_UID = 65532; // Dockerfile.kernel's sandbox user
const IPC = '/run/cellgate/ipc';
const KEYS = '/run/secrets/cellgate-relay-keys';

describe('the relay on a swarm worker', { skip: missing }, () => {
  let lab = null;
  const made = { services: [], secrets: [], configs: [] };
  let t0 = 0;

  before(async () => {
    t0 = Date.now();
    lab = await startSwarm({ workers: 2 });
    process.stderr.write(`relay probe: lab up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  });
  after(async () => {
    const started = Date.now();
    for (const id of made.services) await lab?.engineCall(lab.manager, 'DELETE', `/services/${id}`);
    // A secret or config in use by a task that is still stopping cannot go yet.
    for (let i = 0; i < 40; i++) {
      const left = [];
      for (const id of made.secrets) if ((await lab?.engineCall(lab.manager, 'DELETE', `/secrets/${id}`))?.status >= 400) left.push(id);
      made.secrets = left;
      const leftConfigs = [];
      for (const id of made.configs) if ((await lab?.engineCall(lab.manager, 'DELETE', `/configs/${id}`))?.status >= 400) leftConfigs.push(id);
      made.configs = leftConfigs;
      if (!left.length && !leftConfigs.length) break;
      await sleep(250);
    }
    await lab?.stop();
    process.stderr.write(`relay probe: clean-up ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });

  test('a kernel on a worker, through the relay, as the sandbox user without a network', async () => {
    const probe = spawn(PROBE, ['--remote', '--listen', lab.hostAddress, '--relay-ipc', IPC,
      '--keys-path', KEYS, '--uid', String(SANDBOX_UID)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    probe.stdout.on('data', (d) => { out += d; });
    probe.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((resolve) => probe.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 100 && !out.includes('\n'); i++) await sleep(100);
    const link = JSON.parse(out.split('\n')[0]);

    const secret = await lab.engineCall(lab.manager, 'POST', '/secrets/create', {
      Name: 'cellgate-relay-keys', Labels: { app: 'cellgate' },
      Data: Buffer.from(`${link.relay_public}\n${link.relay_secret}\n`).toString('base64'),
    });
    assert.equal(secret.status, 201, secret.text);
    made.secrets.push(secret.body.ID);
    const config = await lab.engineCall(lab.manager, 'POST', '/configs/create', {
      Name: 'cellgate-relay', Labels: { app: 'cellgate' }, Data: fs.readFileSync(RELAY).toString('base64'),
    });
    assert.equal(config.status, 201, config.text);
    made.configs.push(config.body.ID);

    const service = await lab.engineCall(lab.manager, 'POST', '/services/create', {
      Name: 'cg-relay-probe',
      Labels: { app: 'cellgate', session_id: 'sb-relay' },
      TaskTemplate: {
        ContainerSpec: {
          Image: PODMAN_IMAGE,
          Command: ['/opt/cellgate/bin/cellgate-relay'],
          Args: ['--server', link.endpoint, '--server-key', link.server_key, '--keys', KEYS,
            '--sandbox', 'sb-relay', '--ipc-dir', IPC, '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), '--isolate-net'],
          User: '0:0',
          // The relay makes each kernel's network namespace; the kernels run without it.
          CapabilityAdd: ['CAP_SYS_ADMIN'],
          Mounts: [{ Type: 'tmpfs', Target: IPC, TmpfsOptions: { SizeBytes: 1 << 20 } }],
          Secrets: [{ File: { Name: 'cellgate-relay-keys', UID: '0', GID: '0', Mode: 0o400 }, SecretID: secret.body.ID, SecretName: 'cellgate-relay-keys' }],
          Configs: [{ File: { Name: '/opt/cellgate/bin/cellgate-relay', UID: '0', GID: '0', Mode: 0o555 }, ConfigID: config.body.ID, ConfigName: 'cellgate-relay' }],
        },
        Resources: { Limits: { MemoryBytes: 512 << 20, Pids: 256 } },
        Placement: { Constraints: ['node.role==worker'] },
        Networks: [{ Target: lab.network.name }],
        RestartPolicy: { Condition: 'none' },
      },
      Mode: { Replicated: { Replicas: 1 } },
      EndpointSpec: { Mode: 'dnsrr' },
    });
    assert.equal(service.status, 201, service.text);
    made.services.push(service.body.ID);

    let timer = null;
    const code = await Promise.race([exited, new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 240000); })]);
    clearTimeout(timer);
    if (code === 'timeout') probe.kill('SIGKILL');
    const tasks = (await lab.engineCall(lab.manager, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: ['cg-relay-probe'] }))}`)).body;
    const node = lab.nodes.find((n) => n.nodeId === tasks[0]?.NodeID);
    process.stderr.write(`relay probe: ${out.split('\n').slice(1).join(' ').trim()}; task on ${node?.name} (${node?.role}), state ${tasks[0]?.Status?.State} ${tasks[0]?.Status?.Err || ''}\n`);
    assert.equal(code, 0, `the hub's checks (exit ${code}):\n${err.split('\n').filter((l) => /FAIL/.test(l)).join('\n')}`);
    assert.equal(node?.role, 'worker');
  });
});
