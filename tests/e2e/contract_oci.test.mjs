// The backend contract (contract.mjs) on the OCI backend: runc as root, the host's read-only /usr.

import { contractSuite } from './contract.mjs';

contractSuite('oci', {
  skip: process.getuid() === 0 ? false : 'the oci backend needs root (run the rootless contract as a normal user)',
  setup: async () => ({ args: ['--backend', 'oci'] }),
});
