// What only the Docker Engine API backend has (backend_docker.mjs), against Podman's
// Docker-compatible service on a private socket (podman.mjs).

import { backendDockerSuite } from './backend_docker.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

backendDockerSuite('podman', { skip: podmanMissing(), start: startPodman });
