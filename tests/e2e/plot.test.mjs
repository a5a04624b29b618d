// Rich display output: a matplotlib inline plot comes back as an MCP image block and a display_data output.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, show, startServer } from './lib.mjs';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.close();
});

test('matplotlib plot → image/png content block and display_data output', async () => {
  const r = await callExec(server.client, {
    language: 'python',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1,2,3],[3,1,2])\nplt.show()',
    session_id: 'sess_e2eplot00001',
    timeout: 120,
  });
  const s = expectStatus(r, 'success', server);

  const image = r.content.find((c) => c.type === 'image' && c.mimeType === 'image/png');
  assert.ok(image, `no image/png content block: ${show(r, server)}`);
  assert.equal(typeof image.data, 'string');
  const png = Buffer.from(image.data, 'base64');
  assert.ok(png.length > PNG_SIGNATURE.length, 'PNG too short');
  assert.deepEqual(png.subarray(0, PNG_SIGNATURE.length), PNG_SIGNATURE, 'image data is not a PNG');

  // The display_data output names the image block instead of repeating its base64.
  const display = s.outputs.find((o) => o.type === 'display_data' && o.mime_type === 'image/png');
  assert.ok(display, `no display_data with image/png in outputs: ${show(r, server)}`);
  assert.equal(r.content[display.content_index], image);
});

test('a one-shot plt.show() says what its image is, not "(no output)"', async () => {
  const r = await callExec(server.client, {
    language: 'python',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1,2,3],[3,1,2])\nplt.show()',
    timeout: 120,
  });
  expectStatus(r, 'success', server);
  const image = r.content.find((c) => c.type === 'image' && c.mimeType === 'image/png');
  assert.ok(image, `no image/png content block: ${show(r, server)}`);
  const png = Buffer.from(image.data, 'base64');
  const width = png.readUInt32BE(16), height = png.readUInt32BE(20); // IHDR
  assert.equal(r.content[0].type, 'text');
  assert.equal(r.content[0].text, `(no text output; 1 image: image/png ${width}x${height})`, show(r, server));
});
