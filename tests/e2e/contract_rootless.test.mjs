// The backend contract (contract.mjs) on the rootless backend: runc in a user namespace, run
// by a normal user. ctest's e2e_rootless runs this file as that user (tests/e2e/as-user.sh);
// run as root it is skipped.

import { contractSuite } from './contract.mjs';

contractSuite('rootless', {
  skip: process.getuid() === 0 ? 'the rootless backend is for a normal user: ctest runs this file as one (e2e_rootless, tests/e2e/as-user.sh)' : false,
  setup: async () => ({ args: ['--backend', 'rootless'] }),
});
