// The backend contract (contract.mjs) on the Docker Engine API backend, against the real
// Docker Engine: a dockerd of the test's own from Debian's docker.io (dockerd.mjs).

import { contractSuite } from './contract.mjs';
import { dockerdMissing, startDockerd } from './dockerd.mjs';

contractSuite('docker', {
  skip: dockerdMissing(),
  setup: async () => {
    const dockerd = await startDockerd();
    return { args: dockerd.args, stop: () => dockerd.stop() };
  },
});
