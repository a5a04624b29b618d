// The image budget (issue 16, point 5): a result carries at most --image-budget bytes of
// images inline; a larger chart comes as a downscaled preview (libgd on the host, after a
// header check) plus a resource_link to the whole file and its download URL, never twice;
// images that claim a huge size or do not decode are linked, not decoded.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, startServer } from './lib.mjs';

const BUDGET = 49152; // the default
let server;
let client;

before(async () => {
  server = await startServer({ name: 'images', args: ['--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const imageBytes = (r) => r.content.filter((c) => c.type === 'image').reduce((n, c) => n + Buffer.from(c.data, 'base64').length, 0);

// PNG width and height from its IHDR.
const pngSize = (buf) => [buf.readUInt32BE(16), buf.readUInt32BE(20)];

test('a 5 MB chart comes as a preview within the budget and a link to the whole file', async () => {
  const code = [
    'import numpy as np, matplotlib',
    'import matplotlib.pyplot as plt',
    'rng = np.random.default_rng(7)',
    'fig = plt.figure(figsize=(16, 16), dpi=100)',
    'plt.imshow(rng.random((1600, 1600)), interpolation="nearest")',
    'plt.show()',
  ].join('\n');
  const r = await callExec(client, { language: 'python', code, session_id: 'sess_imagesbig001' });
  const s = expectStatus(r, 'success', server);
  const item = s.outputs.find((o) => o.preview);
  assert.ok(item, JSON.stringify(s.outputs));
  assert.ok(item.size_bytes > 3_000_000, `the chart is ${item.size_bytes} bytes`);
  assert.equal(item.data['image/png'], undefined, 'the base64 is not in structuredContent');
  assert.deepEqual(item.omitted, ['image/png']);
  // the preview: one image block, within the budget, smaller than the chart
  const blocks = r.content.filter((c) => c.type === 'image');
  assert.equal(blocks.length, 1);
  assert.ok(imageBytes(r) <= BUDGET, `${imageBytes(r)} bytes inline`);
  assert.equal(r.content[item.content_index], blocks[0]);
  assert.equal(blocks[0].mimeType, item.preview.mime_type);
  const preview = Buffer.from(blocks[0].data, 'base64');
  assert.equal(preview.length, item.preview.size_bytes);
  if (item.preview.mime_type === 'image/png') assert.deepEqual(pngSize(preview), [item.preview.width, item.preview.height]);
  assert.ok(item.preview.width <= 1024 && item.preview.width < 1600, JSON.stringify(item.preview));
  // the whole file: a resource_link with its download URL, which serves it byte for byte
  const link = r.content.find((c) => c.type === 'resource_link');
  assert.ok(link, JSON.stringify(r.content.map((c) => c.type)));
  assert.equal(link.uri, item.download_url);
  assert.equal(link.size, item.size_bytes);
  const whole = Buffer.from(await (await fetch(link.uri)).arrayBuffer());
  assert.equal(whole.length, item.size_bytes);
  const [w, h] = pngSize(whole);
  assert.ok(w > 1024 && h > 1024, `the whole chart is ${w} x ${h}`);
  assert.match(r.content[0].text, /over the result's image budget of 49152 bytes: a smaller preview is sent/);
});

test('small charts stay inline in full until the budget is used, then are previewed', async () => {
  const code = [
    'import matplotlib.pyplot as plt',
    'for i in range(6):',
    '    plt.figure(figsize=(4, 3), dpi=80); plt.plot([1, 2, 3], [i, 1, 2]); plt.show()',
  ].join('\n');
  const r = await callExec(client, { language: 'python', code, session_id: 'sess_imagessmall1' });
  const s = expectStatus(r, 'success', server);
  const images = s.outputs.filter((o) => o.mime_type === 'image/png');
  assert.equal(images.length, 6);
  const full = images.filter((o) => !o.preview);
  assert.ok(full.length >= 1, 'the first charts go inline whole');
  assert.ok(imageBytes(r) <= BUDGET);
  for (const o of full) assert.equal(Buffer.from(r.content[o.content_index].data, 'base64').length, o.size_bytes);
});

test('an image whose header claims 100000 x 100000 pixels is linked, never decoded', async () => {
  const code = [
    'import struct, zlib, base64',
    'from IPython.display import display, Image',
    'def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
    'ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)',
    'pad = chunk(b"tEXt", b"pad\\0" + bytes(65 + i % 26 for i in range(80000)))',  // over the budget: not sent whole
    'png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", ihdr) + pad + chunk(b"IDAT", zlib.compress(b"\\0" * 4000000)) + chunk(b"IEND", b"")',
    'junk = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 400, 400, 8, 2, 0, 0, 0)) + b"garbage" * 20000',
    'display(Image(data=png, format="png")); display(Image(data=junk, format="png"))',
  ].join('\n');
  const r = await callExec(client, { language: 'python', code, session_id: 'sess_imagesbomb01' });
  const s = expectStatus(r, 'success', server);
  const items = s.outputs.filter((o) => o.mime_type === 'image/png');
  assert.equal(items.length, 2, JSON.stringify(s.outputs));
  for (const o of items) {
    assert.equal(o.preview, undefined);
    assert.equal(o.content_index, undefined);
  }
  assert.equal(r.content.filter((c) => c.type === 'image').length, 0);
  assert.equal(r.content.filter((c) => c.type === 'resource_link').length, 2);
  assert.match(r.content[0].text, /not sent inline/);
  // and the server is fine
  const ok = await callExec(client, { language: 'python', code: "print('ok')", session_id: 'sess_imagesbomb01' });
  assert.equal(expectStatus(ok, 'success', server).stdout, 'ok\n');
});

test('--image-budget sets the budget', async () => {
  const small = await startServer({ name: 'images-budget', args: ['--http-listen', '127.0.0.1:0', '--image-budget', '2048'] });
  try {
    const code = 'import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=80); plt.plot([1, 2, 3]); plt.show()';
    const r = await callExec(small.client, { language: 'python', code, session_id: 'sess_imagesbudget' });
    expectStatus(r, 'success', small);
    assert.ok(imageBytes(r) <= 2048, `${imageBytes(r)} bytes inline`);
    assert.equal(r.content.filter((c) => c.type === 'resource_link').length, 1);
  } finally {
    await small.close();
  }
});
