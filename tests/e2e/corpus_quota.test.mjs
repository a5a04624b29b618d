// Hostile corpus, quota (issue 23, point 3) on the default backend (oci, runc as root): every
// path a sandbox can write has a limit (corpus_quota_suite.mjs).

import { quotaSuite } from './corpus_quota_suite.mjs';

quotaSuite('oci');
