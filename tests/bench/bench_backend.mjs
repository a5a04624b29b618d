// One-shot latency per sandbox backend (issue 14): the time of an execute_code of python
// `print(1)` with no session (a fresh sandbox and kernel each call, no warm pool) against three
// servers in the same run: --backend oci (runc as root), --backend rootless (runc in a user
// namespace, the server run as the normal user scripts/setup.sh test makes, cellgate-test)
// --backend docker (Podman's compatible service on a private socket, running the sandbox
// image, scripts/build-image.sh) and --backend oci --image with that image's root file
// system instead of the host's /usr. Calls alternate between the servers so that load
// from elsewhere falls on all alike.
//
//   node tests/bench/bench_backend.mjs [rounds=10]      (root, after scripts/setup.sh test;
//                                                      the build dir readable by cellgate-test)
//
// Prints each backend's percentiles and the ratio of the medians. Not part of the test
// command: a benchmark, not a pass/fail check.

import { callExec, sc, startServer } from '../e2e/lib.mjs';
import { podmanMissing, startPodman } from '../e2e/podman.mjs';
import { fmt, pct } from './stats.mjs';

const ROUNDS = Number(process.argv[2] || 10);
// scripts/build-image.sh's default export of the sandbox image (startPodman builds it).
const IMAGE_ROOTFS = '/var/lib/cellgate/images/cellgate-kernel';
if (podmanMissing()) {
  console.log(`bench_backend: ${podmanMissing()}`);
  process.exit(0);
}

async function oneShot(server) {
  const started = process.hrtime.bigint();
  const r = await callExec(server.client, { language: 'python', code: 'print(1)' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (sc(r).status !== 'success' || sc(r).stdout !== '1\n') throw new Error(JSON.stringify(sc(r)));
  return ms;
}

const podman = await startPodman();
const servers = [];
try {
  const user = process.env.CELLGATE_TEST_USER || 'cellgate-test';
  const configs = [
    { name: '--backend oci', args: ['--backend', 'oci'] },
    { name: `--backend rootless (${user})`, args: ['--backend', 'rootless'], asUser: user },
    { name: '--backend docker (podman)', args: podman.args },
    { name: '--backend oci --image (rootfs)', args: ['--backend', 'oci', '--image', IMAGE_ROOTFS] },
  ];
  for (const c of configs)
    servers.push(await startServer({ name: 'bench-backend', asUser: c.asUser, args: ['--http-listen', 'off', '--pool', '0', ...c.args] }));
  for (const s of servers) await oneShot(s); // page cache and engine warm
  const times = configs.map(() => []);
  for (let i = 0; i < ROUNDS; i++)
    for (let k = 0; k < servers.length; k++) times[k].push(await oneShot(servers[k]));
  console.log(`one-shot python print(1) (no session, no pool), ${ROUNDS} rounds:`);
  configs.forEach((c, k) => console.log(`  ${c.name.padEnd(36)} ${fmt(times[k])}`));
  const [oci, rootless, docker, image] = times.map((xs) => pct(xs, 50));
  console.log(`  ratio of medians (rootless / oci): ${(rootless / oci).toFixed(2)} (${(rootless - oci).toFixed(1)} ms)`);
  console.log(`  ratio of medians (docker / oci): ${(docker / oci).toFixed(2)} (+${(docker - oci).toFixed(1)} ms)`);
  console.log(`  ratio of medians (oci --image / oci): ${(image / oci).toFixed(2)} (${(image - oci).toFixed(1)} ms)`);
} finally {
  for (const s of servers) await s.close();
  await podman.stop();
}
