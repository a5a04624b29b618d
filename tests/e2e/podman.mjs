// Podman's Docker-compatible service on a private socket, for the Docker backend's tests and
// benchmark: the sandbox image (Dockerfile.kernel, scripts/build-image.sh, cached) and
// `podman system service`.

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO_ROOT, sleep, which } from './lib.mjs';

export const PODMAN_IMAGE = 'localhost/cellgate-kernel:latest';

/** Why the Docker backend cannot be tried here (podman missing), or false. */
export const podmanMissing = () =>
  which('podman') ? false : 'podman is not installed (scripts/setup.sh test installs it): the Docker backend cannot be tested here';

/**
 * Builds the sandbox image when needed (scripts/build-image.sh, cached by its stamp), unless
 * CG_TEST_NO_IMAGE_BUILD is set: then the machine's image is used as it is (a work tree whose
 * kernels/ differ from the image's would otherwise rebuild the machine-wide image).
 */
export function buildImage() {
  if (process.env.CG_TEST_NO_IMAGE_BUILD) return;
  execFileSync(path.join(REPO_ROOT, 'scripts', 'build-image.sh'), ['--image', PODMAN_IMAGE], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 1800000 });
}

/**
 * Builds the sandbox image when needed (cached; scripts/test.sh builds it before ctest) and starts `podman system service` on a socket in a
 * fresh temp dir, with runc (crun refuses hybrid cgroup hosts) and cgroupfs (no systemd).
 * Returns { socket, args (cellgate's --backend docker flags), engine: 'podman', stop() }.
 */
export async function startPodman() {
  buildImage();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-podman-'));
  const socket = path.join(tmp, 'podman.sock');
  const conf = path.join(tmp, 'containers.conf');
  fs.writeFileSync(conf, '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n');
  const service = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
    env: { ...process.env, CONTAINERS_CONF: conf },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 200 && !fs.existsSync(socket); i++) await sleep(50);
  const stop = async () => {
    if (service.exitCode === null && service.signalCode === null) {
      service.kill('SIGTERM');
      await new Promise((resolve) => service.once('exit', resolve));
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  if (!fs.existsSync(socket)) {
    await stop();
    throw new Error('podman system service did not make its socket');
  }
  return { socket, engine: 'podman', args: ['--backend', 'docker', '--image', PODMAN_IMAGE, '--docker-host', `unix://${socket}`], stop };
}
