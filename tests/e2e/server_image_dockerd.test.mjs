// The server image as a container of the real Docker Engine (a dockerd of the test's own,
// dockerd.mjs), its sandboxes siblings of it (server_image.mjs).

import { dockerdMissing, startDockerd } from './dockerd.mjs';
import { serverImageSuite } from './server_image.mjs';

serverImageSuite('dockerd', { skip: dockerdMissing(), start: startDockerd });
