// Hostile corpus, quota (issue 23, point 3) on the Docker Engine API backend, against Podman's
// Docker-compatible service on a private socket (tests/e2e/podman.mjs): the same binds of the
// session's disk and ipc tmpfs, the same limits (corpus_quota_suite.mjs), except that the
// Docker API takes no inode count for /tmp and /dev/shm (Podman refuses nr_inodes): there
// the sandbox's memory limit bounds their inodes.

import { quotaSuite } from './corpus_quota_suite.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

quotaSuite('docker', {
  skip: podmanMissing(),
  setup: async () => {
    const podman = await startPodman();
    return { args: podman.args, stop: () => podman.stop() };
  },
  limits: { '/tmp': { mb: 64, files: null }, '/dev/shm': { mb: 64, files: null } },
});
