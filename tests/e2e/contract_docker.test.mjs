// The backend contract (contract.mjs) on the Docker Engine API backend, against Podman's
// Docker-compatible service on a private socket (tests/e2e/podman.mjs).

import { contractSuite } from './contract.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

contractSuite('docker', {
  skip: podmanMissing(),
  setup: async () => {
    const podman = await startPodman();
    return { args: podman.args, stop: () => podman.stop() };
  },
});
