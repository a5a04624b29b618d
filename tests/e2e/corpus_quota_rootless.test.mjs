// Hostile corpus, quota (issue 23, point 3) on the rootless backend, run as a normal user
// (tests/e2e/as-user.sh; ctest's e2e_rootless): a normal user can mount neither a loop device
// nor a tmpfs on the host, so the workspace, the package layer and the ipc directory have no
// limit, and list_sessions' limits.not_enforced must say so for each; /tmp, /dev/shm and /dev
// (writable here: the sandbox's user is root in its user namespace) keep theirs
// (corpus_quota_suite.mjs).

import { quotaSuite } from './corpus_quota_suite.mjs';

quotaSuite('rootless', {
  skip: process.getuid() === 0 ? 'the rootless backend runs as a normal user (tests/e2e/as-user.sh, ctest e2e_rootless)' : false,
  disk: false,
  limits: {
    '/mnt/data': { notEnforced: 'the workspace' },
    '/opt/cellgate/site': { notEnforced: '/opt/cellgate/site' },
    '/run/cellgate/ipc': { notEnforced: '/run/cellgate/ipc' },
    '/dev': { mb: 64, files: 4096 },
  },
});
