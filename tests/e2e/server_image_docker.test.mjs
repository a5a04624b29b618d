// The server image as a container of Podman's Docker-compatible service, its sandboxes
// siblings of it (server_image.mjs).

import { podmanMissing, startPodman } from './podman.mjs';
import { serverImageSuite } from './server_image.mjs';

serverImageSuite('podman', { skip: podmanMissing(), start: startPodman });
