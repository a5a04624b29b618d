// Results a model can read (issue 12, point 6): no heavy payload twice in one result,
// read_artifact's bytes once by default, Python's dict value as JSON, list_sessions'
// languages, memory figures rounded and per run, and displays saved as files only where
// the code did not save them (--save-displays).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, show, startServer } from './lib.mjs';

let server;
let client;
let all; // a server with --save-displays all

before(async () => {
  server = await startServer({ name: 'slim', args: ['--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
  await all?.close();
});

const call = (name, args, c = client) => c.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
const python = (sid, code, c = client) => callExec(c, { language: 'python', session_id: sid, code, timeout: 120 });

/** The strings of VALUE of at least MIN characters. */
function longStrings(value, min, found = []) {
  if (typeof value === 'string') {
    if (value.length >= min) found.push(value);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) longStrings(v, min, found);
  }
  return found;
}

/** Asserts that no string of 1000 characters or more appears twice in RESULT. */
function assertNothingTwice(result) {
  const text = JSON.stringify(result);
  for (const s of new Set(longStrings(result, 1000))) {
    const once = JSON.stringify(s).slice(1, -1);
    const count = text.split(once).length - 1;
    assert.equal(count, 1, `${s.slice(0, 60)}… (${s.length} chars) appears ${count} times: ${show(result, server)}`);
  }
}

test('a plot and a DataFrame value: each heavy payload once in the result', async () => {
  const r = await python('sess_slimplot0001', [
    'import matplotlib.pyplot as plt, pandas as pd',
    'plt.plot([1, 2, 3], [3, 1, 2]); plt.show()',
    "pd.DataFrame({'x': range(20), 'y': [i * i for i in range(20)], 'z': ['w' * 8] * 20})",
  ].join('\n'));
  const s = expectStatus(r, 'success', server);
  const image = r.content.find((c) => c.type === 'image');
  assert.ok(image, show(r, server));
  const value = s.outputs.find((o) => o.type === 'execute_result');
  assert.ok(value.data['text/html'].length > 1000, 'the DataFrame has its HTML, in its outputs item');
  assert.equal(s.return_value['text/html'], undefined, 'return_value does not repeat it');
  assertNothingTwice(r);
});

test('read_artifact of a PNG: the bytes once by default, in an image block when asked', async () => {
  const sid = 'sess_slimread0001';
  expectStatus(await python(sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.savefig('/mnt/data/c.png')"), 'success', server);
  const plain = await call('read_artifact', { session_id: sid, path: '/mnt/data/c.png' });
  assert.equal(plain.isError, false, show(plain, server));
  const png = Buffer.from(plain.structuredContent.content_base64, 'base64');
  assert.equal(png.length, plain.structuredContent.size_bytes, 'seed 004: content_base64 holds the bytes');
  assert.equal(plain.content.filter((c) => c.type === 'image').length, 0, show(plain, server));
  assertNothingTwice(plain);

  const shown = await call('read_artifact', { session_id: sid, path: '/mnt/data/c.png', format: 'image' });
  const block = shown.content.find((c) => c.type === 'image');
  assert.ok(block, show(shown, server));
  assert.deepEqual(Buffer.from(block.data, 'base64'), png);
  assert.equal(shown.structuredContent.content_base64, '');
  assertNothingTwice(shown);

  const both = await call('read_artifact', { session_id: sid, path: '/mnt/data/c.png', format: 'both' });
  assert.equal(both.structuredContent.content_base64, block.data);
  assert.ok(both.content.some((c) => c.type === 'image'));

  const bad = await call('read_artifact', { session_id: sid, path: '/mnt/data/c.png', format: 'jpeg' });
  assert.equal(bad.structuredContent.error, 'invalid_params', show(bad, server));
});

test("a Python dict's returnValue is JSON, as JavaScript's is", async () => {
  const sid = 'sess_slimvalue001';
  const py = expectStatus(await python(sid, "{'a': 1, 'b': [1, 2.5, None], 'c': {'d': 'e'}}"), 'success', server);
  assert.deepEqual(py.returnValue, { a: 1, b: [1, 2.5, null], c: { d: 'e' } });
  const list = expectStatus(await python(sid, '[1, 2, 3]'), 'success', server);
  assert.deepEqual(list.returnValue, [1, 2, 3]);
  const js = expectStatus(await callExec(client, { language: 'javascript', session_id: sid, code: "({a: 1, b: [1, 2.5, null], c: {d: 'e'}})" }), 'success', server);
  assert.deepEqual(js.returnValue, py.returnValue);
  // What is not plain JSON data stays the repr.
  const odd = expectStatus(await python(sid, "{1: float('nan')}"), 'success', server);
  assert.equal(odd.returnValue, '{1: nan}');

  const listed = await call('list_sessions', {});
  const entry = listed.structuredContent.sessions.find((e) => e.session_id === sid);
  assert.deepEqual(entry.languages, ['python', 'javascript'], show(listed, server));
  assert.equal(entry.language, 'python');
});

test('memory figures: memory_mb rounded to 0.1 MB in every block; memoryUsedMB is each run\'s own peak', async () => {
  const sid = 'sess_slimmemory01';
  const big = expectStatus(await python(sid, 'x = bytearray(200 * 1024 * 1024)\nx[::4096] = b"y" * len(x[::4096])\ndel x'), 'success', server);
  const small = expectStatus(await python(sid, '1 + 1'), 'success', server);
  assert.ok(big.memoryUsedMB >= 200, `the 200 MB run peaked at ${big.memoryUsedMB} MB`);
  assert.ok(small.memoryUsedMB < big.memoryUsedMB - 100, `the next run's own peak (${small.memoryUsedMB} MB) is not the 200 MB one (${big.memoryUsedMB} MB)`);
  for (const mb of [big.memoryUsedMB, small.memoryUsedMB]) assert.equal(mb, Math.round(mb * 10) / 10);

  const listed = await call('list_sessions', {});
  const entry = listed.structuredContent.sessions.find((e) => e.session_id === sid);
  assert.equal(typeof entry.memory_mb, 'number');
  assert.equal(entry.memory_mb, Math.round(entry.memory_mb * 10) / 10);
  const text = listed.content[0].text;
  const written = /"memory_mb":([0-9.]+)/.exec(text.slice(text.indexOf(sid)));
  assert.ok(written, text);
  assert.match(written[1], /^\d+(\.\d)?$/, `memory_mb as the text block writes it: ${written[1]}`);
});

test('displays are saved as files only as --save-displays says (figures by default)', async () => {
  const sid = 'sess_slimsave0001';
  // A DataFrame's HTML stays inline; the file list shows nothing new.
  const df = expectStatus(await python(sid, "import pandas as pd\npd.DataFrame({'a': [1, 2]})"), 'success', server);
  assert.deepEqual(df.artifacts_created, [], show(df, server));
  assert.equal(df.outputs[0].path, undefined);
  assert.ok(df.outputs[0].data['text/html'].includes('<table'));
  // A figure the code saved itself is not saved again.
  const r = await python(sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.savefig('/mnt/data/mine.png'); plt.show()");
  const saved = expectStatus(r, 'success', server);
  assert.deepEqual(saved.artifacts_created, ['mine.png'], show(r, server));
  assert.ok(r.content.some((c) => c.type === 'image'), 'still shown');
  // A figure only shown is saved, with its link.
  const shown = expectStatus(await python(sid, 'plt.plot([3, 1]); plt.show()'), 'success', server);
  const item = shown.outputs.find((o) => o.mime_type === 'image/png');
  assert.match(item.path ?? '', /^\/mnt\/data\/outputs\/exec_[0-9a-f]{12}-1\.png$/, show(shown, server));
  assert.ok(item.download_url);
  const listed = await call('list_artifacts', { session_id: sid });
  const names = listed.structuredContent.artifacts.map((a) => a.path).filter((p) => p.includes('/outputs/'));
  assert.deepEqual(names, [item.path]);

  // --save-displays all: the DataFrame's HTML too.
  all = await startServer({ name: 'slim-all', args: ['--http-listen', 'off', '--save-displays', 'all'] });
  const html = expectStatus(await python('sess_slimsave0002', "import pandas as pd\npd.DataFrame({'a': [1, 2]})", all.client), 'success', all);
  assert.match(html.outputs[0].path ?? '', /\.html$/, show(html, all));
});

test("seed 003's files echo comes only when the caller sent files", async () => {
  const sid = 'sess_slimfiles001';
  const quiet = expectStatus(await python(sid, "open('/mnt/data/out.txt', 'w').write('hello')"), 'success', server);
  assert.deepEqual(quiet.files, {}, show(quiet, server));
  assert.deepEqual(quiet.artifacts_created, ['out.txt']);
  const asked = expectStatus(await callExec(client, { language: 'python', session_id: sid, files: { 'in.txt': 'x' },
    code: "open('/mnt/data/out.txt', 'w').write(open('/mnt/data/in.txt').read() * 3)" }), 'success', server);
  assert.deepEqual(asked.files, { 'out.txt': 'xxx' }, show(asked, server));
});
