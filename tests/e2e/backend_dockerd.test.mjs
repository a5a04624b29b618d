// What only the Docker Engine API backend has (backend_docker.mjs), against the real Docker
// Engine: a dockerd of the test's own from Debian's docker.io (dockerd.mjs).

import { backendDockerSuite } from './backend_docker.mjs';
import { dockerdMissing, startDockerd } from './dockerd.mjs';

backendDockerSuite('dockerd', { skip: dockerdMissing(), start: startDockerd });
