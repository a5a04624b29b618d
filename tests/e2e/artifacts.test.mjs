// Seed 004's file tools through the MCP SDK client: upload_file, run_python's artifacts,
// list_artifacts, read_artifact, the HTTP download listener, output truncation with the
// full text kept, display outputs saved as files, and symlink escapes planted by
// sandboxed code against every host-side path (tools and HTTP).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer } from './lib.mjs';

const LIMITS = {
  upload: 200000,
  read: 100000,
  output: 2000,
  head: 500,
  tail: 500,
  code: 5000,
};

let server;
let client;

before(async () => {
  server = await startServer({
    name: 'artifacts',
    args: [
      '--http-listen', '127.0.0.1:0',
      '--max-upload-bytes', String(LIMITS.upload),
      '--max-artifact-read-bytes', String(LIMITS.read),
      '--max-output-bytes', String(LIMITS.output),
      '--output-head-bytes', String(LIMITS.head),
      '--output-tail-bytes', String(LIMITS.tail),
      '--max-code-bytes', String(LIMITS.code),
    ],
  });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
const b64 = (text) => Buffer.from(text).toString('base64');
const sc = (r) => r.structuredContent;

function ok(result) {
  assert.equal(result.isError, false, `unexpected error: ${JSON.stringify(result).slice(0, 3000)}\n${server.stderrText().slice(-2000)}`);
  return result.structuredContent;
}

function fails(result, error) {
  assert.equal(result.isError, true, `expected ${error}: ${JSON.stringify(result).slice(0, 2000)}`);
  assert.equal(sc(result).error, error, JSON.stringify(sc(result)));
  assert.equal(typeof sc(result).message, 'string');
  return sc(result);
}

async function newSession() {
  const up = ok(await call('upload_file', { filename: 'seed.txt', content_base64: b64('seed') }));
  return up.session_id;
}

async function python(sessionId, code) {
  return call('run_python', { session_id: sessionId, code });
}

test('tools/list serves upload_file, read_artifact and list_artifacts with schemas', async () => {
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const name of ['upload_file', 'read_artifact', 'list_artifacts', 'run_python', 'close_session']) {
    assert.ok(byName[name], `missing ${name}`);
    assert.equal(byName[name].outputSchema.type, 'object', name);
  }
  assert.deepEqual(byName.upload_file.inputSchema.required.sort(), ['content_base64', 'filename']);
  assert.deepEqual(byName.read_artifact.inputSchema.required.sort(), ['path', 'session_id']);
  assert.deepEqual(byName.list_artifacts.inputSchema.required, ['session_id']);
});

test('upload_file creates a session, code reads the file, files persist across run_python calls', async () => {
  const csv = 'channel,spend\nsearch,100\nsocial,50\n';
  const up = ok(await call('upload_file', { filename: 'sales.csv', content_base64: b64(csv) }));
  assert.match(up.session_id, /^sess_[0-9a-f]{12}$/);
  assert.equal(up.path, '/mnt/data/sales.csv');
  assert.equal(up.filename, 'sales.csv');
  assert.equal(up.size_bytes, csv.length);
  assert.equal(up.mime_type, 'text/csv');
  assert.match(up.download_url, new RegExp(`^http://127\\.0\\.0\\.1:\\d+/files/${up.session_id}/sales\\.csv\\?token=[0-9a-f]{32}$`));
  const sid = up.session_id;

  let r = ok(await python(sid, "import pandas as pd\ndf = pd.read_csv('/mnt/data/sales.csv')\nprint(int(df.spend.sum()))\nopen('/mnt/data/note.txt', 'w').write('first')"));
  assert.equal(r.stdout, '150\n');
  assert.equal(r.session_id, sid);
  assert.match(r.run_id, /^run_\d{8}T\d{6}Z_[0-9a-f]{4}$/);
  assert.deepEqual(r.artifacts_created, ['note.txt']);
  assert.deepEqual(r.artifacts.map((a) => a.path), ['/mnt/data/note.txt']);
  const note = r.artifacts[0];
  assert.equal(note.filename, 'note.txt');
  assert.equal(note.size_bytes, 5);
  assert.equal(note.mime_type, 'text/plain');
  assert.ok(note.download_url.includes(`/files/${sid}/note.txt?token=`));

  // A second call: the file is still there; changing it is "modified", removing "deleted".
  r = ok(await python(sid, "print(open('/mnt/data/note.txt').read())\nopen('/mnt/data/note.txt', 'a').write(' and more')\nimport os\nos.remove('/mnt/data/seed.txt') if os.path.exists('/mnt/data/seed.txt') else None"));
  assert.equal(r.stdout, 'first\n');
  assert.deepEqual(r.artifacts_modified, ['note.txt']);
  assert.deepEqual(r.artifacts_created, []);
  assert.deepEqual(r.artifacts.map((a) => [a.filename, a.size_bytes]), [['note.txt', 14]]);

  // Nothing written: no artifacts.
  r = ok(await python(sid, 'x = 1'));
  assert.deepEqual(r.artifacts, []);
  assert.deepEqual(r.artifacts_deleted, []);

  // Seed 004: a failed run is not scanned, even when it wrote a file.
  const failed = await python(sid, "open('/mnt/data/half.txt', 'w').write('x')\nraise ValueError('boom')");
  assert.equal(failed.isError, true);
  assert.equal(sc(failed).exit_code, 1);
  assert.deepEqual(sc(failed).artifacts, []);
  assert.match(sc(failed).stderr, /ValueError: boom/);

  const listed = ok(await call('list_artifacts', { session_id: sid }));
  assert.equal(listed.session_id, sid);
  assert.deepEqual(listed.artifacts.map((a) => a.path), ['/mnt/data/half.txt', '/mnt/data/note.txt', '/mnt/data/sales.csv']);
  for (const a of listed.artifacts) {
    assert.deepEqual(Object.keys(a).sort(), ['download_url', 'filename', 'mime_type', 'path', 'size_bytes']);
  }

  const closed = ok(await call('close_session', { session_id: sid }));
  assert.equal(closed.status, 'closed');
  fails(await call('list_artifacts', { session_id: sid }), 'session_not_found');
});

test('upload_file errors: exists, overwrite, bad names, bad base64, too large, bad arguments', async () => {
  const sid = await newSession();
  const exists = fails(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('again') }), 'file_exists');
  assert.equal(exists.message, 'seed.txt already exists. Set overwrite=true to replace.');
  assert.equal(exists.session_id, sid);
  const replaced = ok(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('replaced!'), overwrite: true }));
  assert.equal(replaced.size_bytes, 9);
  const r = ok(await python(sid, "print(open('/mnt/data/seed.txt').read())"));
  assert.equal(r.stdout, 'replaced!\n');

  // Subdirectories are fine, and /mnt/data/ prefixes are accepted.
  const nested = ok(await call('upload_file', { session_id: sid, filename: 'in/data.json', content_base64: b64('{}') }));
  assert.equal(nested.path, '/mnt/data/in/data.json');
  assert.equal(nested.mime_type, 'application/json');

  for (const filename of ['../escape.txt', 'a/../../b.txt', '/etc/passwd', '/mnt/data/../x', 'line\nbreak', 'tab\there', '', 'dir/', '..']) {
    const e = fails(await call('upload_file', { session_id: sid, filename, content_base64: b64('x') }), 'invalid_filename');
    assert.match(e.message, /invalid filename/, filename);
  }
  // A NUL in any string is refused with the request's own id (JSON-RPC invalid params).
  await assert.rejects(call('upload_file', { session_id: sid, filename: 'bad\u0000name', content_base64: b64('x') }),
    (e) => e.code === -32602 && /NUL/.test(e.message));
  fails(await call('upload_file', { session_id: sid, filename: 'x.bin', content_base64: '!!!not base64!!!' }), 'invalid_base64');
  fails(await call('upload_file', { session_id: sid, filename: 'x.bin', content_base64: 'YWJj=' }), 'invalid_base64');
  const big = fails(await call('upload_file', {
    session_id: sid, filename: 'big.bin', content_base64: Buffer.alloc(LIMITS.upload + 1, 7).toString('base64'),
  }), 'file_too_large');
  assert.match(big.message, /upload limit/);
  const huge = fails(await call('upload_file', {
    session_id: sid, filename: 'huge.bin', content_base64: Buffer.alloc(LIMITS.upload * 2, 7).toString('base64'),
  }), 'file_too_large');
  assert.match(huge.message, /huge\.bin/);
  // Exactly at the limit is accepted.
  ok(await call('upload_file', { session_id: sid, filename: 'limit.bin', content_base64: Buffer.alloc(LIMITS.upload, 1).toString('base64') }));

  fails(await call('upload_file', { session_id: sid, content_base64: b64('x') }), 'invalid_params');
  fails(await call('upload_file', { session_id: sid, filename: 'a', content_base64: 5 }), 'invalid_params');
  fails(await call('upload_file', { session_id: sid, filename: 'a', content_base64: b64('x'), overwrite: 'yes' }), 'invalid_params');
  fails(await call('upload_file', { session_id: sid, filename: 'a', content_base64: b64('x'), colour: 1 }), 'invalid_params');
  fails(await call('upload_file', { session_id: '../etc', filename: 'a', content_base64: b64('x') }), 'invalid_params');

  // Nothing from the refused uploads reached the workspace.
  const names = ok(await call('list_artifacts', { session_id: sid })).artifacts.map((a) => a.path).sort();
  assert.deepEqual(names, ['/mnt/data/in/data.json', '/mnt/data/limit.bin', '/mnt/data/seed.txt']);
  await call('close_session', { session_id: sid });
});

test('read_artifact: text, image content block, not_found, too large with download_url, bad paths', async () => {
  const sid = await newSession();
  ok(await python(sid, [
    'import matplotlib.pyplot as plt',
    'plt.plot([1, 3, 2]); plt.savefig("/mnt/data/chart.png"); plt.close()',
    'open("/mnt/data/big.bin", "wb").write(b"z" * ' + (LIMITS.read + 1) + ')',
    'import os; os.makedirs("/mnt/data/sub", exist_ok=True)',
    'open("/mnt/data/sub/t.csv", "w").write("a,b\\n1,2\\n")',
  ].join('\n')));

  const text = await call('read_artifact', { session_id: sid, path: 'sub/t.csv' });
  const t = ok(text);
  assert.equal(t.path, '/mnt/data/sub/t.csv');
  assert.equal(t.filename, 't.csv');
  assert.equal(t.mime_type, 'text/csv');
  assert.equal(t.size_bytes, 8);
  assert.equal(Buffer.from(t.content_base64, 'base64').toString(), 'a,b\n1,2\n');
  assert.ok(text.content[0].text.includes('a,b\n1,2'), 'short text files are shown as text');

  const image = await call('read_artifact', { session_id: sid, path: '/mnt/data/chart.png' });
  const png = ok(image);
  assert.equal(png.mime_type, 'image/png');
  const bytes = Buffer.from(png.content_base64, 'base64');
  assert.equal(bytes.length, png.size_bytes);
  assert.deepEqual([...bytes.subarray(1, 4)], [0x50, 0x4e, 0x47]);
  assert.equal(image.content.find((c) => c.type === 'image'), undefined, 'seed 004: the bytes once, in content_base64');
  const shown = await call('read_artifact', { session_id: sid, path: '/mnt/data/chart.png', format: 'image' });
  const block = shown.content.find((c) => c.type === 'image');
  assert.ok(block, 'an MCP image content block');
  assert.equal(block.mimeType, 'image/png');
  assert.equal(block.data, png.content_base64);
  assert.equal(ok(shown).content_base64, '');

  const missing = fails(await call('read_artifact', { session_id: sid, path: '/mnt/data/nope.png' }), 'not_found');
  assert.equal(missing.message, 'No artifact at /mnt/data/nope.png');

  const large = fails(await call('read_artifact', { session_id: sid, path: '/mnt/data/big.bin' }), 'artifact_too_large');
  assert.equal(large.size_bytes, LIMITS.read + 1);
  assert.match(large.message, /^big\.bin is .* exceeds .* limit\. Use download_url instead\.$/);
  const got = await fetch(large.download_url);
  assert.equal(got.status, 200);
  assert.equal((await got.arrayBuffer()).byteLength, LIMITS.read + 1);

  for (const p of ['../etc/passwd', '/etc/passwd', '/mnt/data/../../etc/passwd', 'a\u0001b']) {
    fails(await call('read_artifact', { session_id: sid, path: p }), 'invalid_path');
  }
  const dir = fails(await call('read_artifact', { session_id: sid, path: '/mnt/data/sub' }), 'invalid_path');
  assert.match(dir.message, /directory/);
  fails(await call('read_artifact', { session_id: 'sess_000000000000', path: 'x' }), 'session_not_found');
  fails(await call('read_artifact', { session_id: sid }), 'invalid_params');
  fails(await call('list_artifacts', {}), 'invalid_params');
  await call('close_session', { session_id: sid });
});

test('HTTP downloads: content type and length, tokens per session, 404s', async () => {
  const a = await newSession();
  const b = await newSession();
  const r = ok(await python(a, 'open("/mnt/data/report.pdf", "wb").write(b"%PDF-1.4 test")'));
  const url = r.artifacts.find((x) => x.filename === 'report.pdf').download_url;

  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/pdf');
  assert.equal(res.headers.get('content-length'), '13');
  assert.equal(Buffer.from(await res.arrayBuffer()).toString(), '%PDF-1.4 test');
  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), '13');

  const u = new URL(url);
  const tokenA = u.searchParams.get('token');
  const tokenB = new URL(ok(await call('list_artifacts', { session_id: b })).artifacts[0].download_url).searchParams.get('token');
  assert.notEqual(tokenA, tokenB, 'every session has its own token');
  const base = `${u.origin}/files`;
  const status = async (p) => (await fetch(`${base}/${p}`)).status;
  assert.equal(await status(`${a}/report.pdf`), 404, 'no token');
  assert.equal(await status(`${a}/report.pdf?token=${tokenB}`), 404, "another session's token");
  assert.equal(await status(`${b}/report.pdf?token=${tokenB}`), 404, "not in the other session's workspace");
  assert.equal(await status(`${a}/missing.pdf?token=${tokenA}`), 404);
  assert.equal(await status(`${a}/..%2F..%2Fetc%2Fpasswd?token=${tokenA}`), 404);
  assert.equal(await status(`sess_000000000000/report.pdf?token=${tokenA}`), 404);

  await call('close_session', { session_id: a });
  assert.equal((await fetch(url)).status, 404, 'a closed session serves nothing');
  await call('close_session', { session_id: b });
});

test('the longest session id the tools accept also downloads; one longer is refused everywhere', async () => {
  const longest = 'L' + 'x'.repeat(127);
  const up = ok(await call('upload_file', { session_id: longest, filename: 'long.txt', content_base64: b64('long id') }));
  assert.equal(up.session_id, longest);
  const res = await fetch(up.download_url);
  assert.equal(res.status, 200, `download of a ${longest.length}-character session id: ${up.download_url}`);
  assert.equal(await res.text(), 'long id');
  const tooLong = longest + 'y';
  const refused = await call('upload_file', { session_id: tooLong, filename: 'x.txt', content_base64: b64('x') });
  assert.equal(refused.isError, true);
  assert.match(JSON.stringify(refused.structuredContent), /must be 1 to 128 characters/);
  await call('close_session', { session_id: longest });
});

test('symlinks planted by sandboxed code never lead the host outside the workspace', async () => {
  const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-secret-'));
  const secret = path.join(secretDir, 'secret.txt');
  fs.writeFileSync(secret, 'host secret');
  try {
    const sid = await newSession();
    ok(await python(sid, [
      'import os',
      `os.symlink(${JSON.stringify(secret)}, '/mnt/data/evil.txt')`,
      `os.symlink(${JSON.stringify(secretDir)}, '/mnt/data/evildir')`,
      "os.symlink('/', '/mnt/data/root')",
      "os.makedirs('/mnt/data/real', exist_ok=True)",
      "os.symlink('/etc/passwd', '/mnt/data/real/passwd')",
    ].join('\n')));

    for (const p of ['evil.txt', 'evildir/secret.txt', 'root/etc/passwd', 'real/passwd', `root${secret}`]) {
      const e = fails(await call('read_artifact', { session_id: sid, path: p }), 'invalid_path');
      assert.match(e.message, /symbolic link/, p);
      assert.ok(!JSON.stringify(e).includes('host secret'));
    }

    const listed = ok(await call('list_artifacts', { session_id: sid })).artifacts.map((a) => a.path);
    assert.deepEqual(listed, ['/mnt/data/seed.txt'], 'links are not listed, nor what they point to');

    // Uploading through a linked directory is refused; the host file is untouched.
    fails(await call('upload_file', { session_id: sid, filename: 'evildir/secret.txt', content_base64: b64('pwned'), overwrite: true }), 'invalid_path');
    fails(await call('upload_file', { session_id: sid, filename: 'evildir/new.txt', content_base64: b64('pwned') }), 'invalid_path');
    fails(await call('upload_file', { session_id: sid, filename: 'evil.txt', content_base64: b64('pwned') }), 'file_exists');
    // Overwriting the link itself replaces the link, never the file it points to.
    ok(await call('upload_file', { session_id: sid, filename: 'evil.txt', content_base64: b64('mine'), overwrite: true }));
    assert.equal(fs.readFileSync(secret, 'utf8'), 'host secret');
    assert.deepEqual(fs.readdirSync(secretDir), ['secret.txt']);
    const back = ok(await call('read_artifact', { session_id: sid, path: 'evil.txt' }));
    assert.equal(Buffer.from(back.content_base64, 'base64').toString(), 'mine');

    // HTTP: the same links give 404.
    const url = new URL(ok(await call('list_artifacts', { session_id: sid })).artifacts[0].download_url);
    const token = url.searchParams.get('token');
    for (const p of ['evildir/secret.txt', 'root/etc/passwd', 'real/passwd']) {
      const res = await fetch(`${url.origin}/files/${sid}/${p}?token=${token}`);
      assert.equal(res.status, 404, p);
      assert.ok(!(await res.text()).includes('host secret'));
    }
    await call('close_session', { session_id: sid });
  } finally {
    fs.rmSync(secretDir, { recursive: true, force: true });
  }
});

test('output over the cap is cut head + tail with the marker; the whole text is kept as a file', async () => {
  const sid = await newSession();
  const code = "print('H' * 1000 + 'M' * 3000 + 'T' * 1000)\nimport sys\nsys.stderr.write('e' * 2500)";
  const result = await python(sid, code);
  const r = ok(result);
  assert.equal(r.stdout_truncated, true);
  assert.equal(r.stderr_truncated, true);
  assert.equal(r.truncated, true);
  const marker = /\n\n\[\.\.\. truncated (\d+) characters \.\.\.\]\n\n/;
  const m = r.stdout.match(marker);
  assert.ok(m, r.stdout.slice(0, 700));
  const [head, tail] = r.stdout.split(marker).filter((_, i) => i !== 1);
  assert.equal(head, 'H'.repeat(LIMITS.head));
  assert.equal(tail, 'T'.repeat(LIMITS.tail - 1) + '\n');
  assert.equal(Number(m[1]), 5001 - LIMITS.head - LIMITS.tail);
  assert.match(r.stdout_file, /^\/mnt\/data\/outputs\/exec_[0-9a-f]{12}-stdout\.txt$/);
  assert.ok(r.stdout_url.includes('/files/'));
  assert.ok(result.content[0].text.includes(r.stdout_file), 'the text block points at the whole output');

  const full = ok(await call('read_artifact', { session_id: sid, path: r.stdout_file }));
  assert.equal(Buffer.from(full.content_base64, 'base64').toString(), 'H'.repeat(1000) + 'M'.repeat(3000) + 'T'.repeat(1000) + '\n');
  const err = await (await fetch(r.stderr_url)).text();
  assert.equal(err, 'e'.repeat(2500));
  assert.ok(r.artifacts.some((a) => a.path === r.stdout_file), 'the full output is an artifact');

  // Multi-byte characters are never split by the cut.
  const u = ok(await python(sid, "print('é' * 3000)"));
  assert.equal(u.stdout_truncated, true);
  assert.ok(!u.stdout.includes('\ufffd'));
  assert.match(u.stdout, /^é+\n\n\[\.\.\. truncated \d+ characters \.\.\.\]\n\né+\n$/);

  // Under the cap: whole, no file.
  const small = ok(await python(sid, "print('short')"));
  assert.equal(small.stdout, 'short\n');
  assert.equal(small.stdout_truncated, false);
  assert.equal(small.stdout_file, undefined);
  await call('close_session', { session_id: sid });
});

test('figure display outputs are saved as files with download URLs (--save-displays figures)', async () => {
  const sid = await newSession();
  const r = ok(await python(sid, [
    'import matplotlib.pyplot as plt, pandas as pd',
    'from IPython.display import display, SVG, JSON',
    'plt.plot([1, 2]); plt.show()',
    "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"></svg>'))",
    "display(JSON({'a': 1}))",
    "pd.DataFrame({'x': [1, 2]})",
  ].join('\n')));
  const saved = r.outputs.filter((o) => o.path);
  assert.deepEqual(saved.map((o) => path.extname(o.path)), ['.png', '.svg'], 'the JSON and the DataFrame stay inline only');
  for (const o of saved) {
    assert.match(o.path, /^\/mnt\/data\/outputs\/exec_[0-9a-f]{12}-\d+\.\w+$/);
    const res = await fetch(o.download_url);
    assert.equal(res.status, 200, o.path);
    assert.ok(r.artifacts.some((a) => a.path === o.path), `${o.path} is an artifact`);
  }
  const pngBytes = Buffer.from(await (await fetch(saved[0].download_url)).arrayBuffer());
  const shown = r.outputs.find((o) => o.mime_type === 'image/png');
  assert.equal(shown.data['image/png'], undefined, 'the base64 is not repeated in outputs');
  assert.equal(shown.size_bytes, pngBytes.length);
  assert.ok(result_has_image(r), 'the chart also comes back inline');
  await call('close_session', { session_id: sid });
});

// The PNG's bytes are in an image content block; its output names the block.
function result_has_image(structured) {
  return structured.outputs.some((o) => o.omitted?.includes('image/png') && Number.isInteger(o.content_index));
}

test('oversized code is refused before it runs', async () => {
  const r = await call('run_python', { code: 'x = 1\n' + '#'.repeat(LIMITS.code) });
  assert.equal(r.isError, true);
  assert.equal(sc(r).error_code, 'INVALID_PARAMS');
  assert.match(sc(r).error_message, /limit is 5000 bytes/);
});

test('upload_file while a run is in progress gets session_busy; the run is unharmed', async () => {
  const sid = await newSession();
  const running = python(sid, "import time\ntime.sleep(3)\nprint(open('/mnt/data/seed.txt').read())");
  await new Promise((r) => setTimeout(r, 1000));
  const busy = fails(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('changed'), overwrite: true }), 'session_busy');
  assert.equal(busy.message, 'A run is already in progress for this session. Wait for it to complete.');
  // Reading and listing do not change the workspace, so they are served meanwhile.
  ok(await call('list_artifacts', { session_id: sid }));
  assert.equal(ok(await running).stdout, 'seed\n');
  ok(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('changed'), overwrite: true }));
  await call('close_session', { session_id: sid });
});

test('upload_file counts against max sessions; a stream over the kept limit is saved with the marker', async () => {
  const small = await startServer({
    name: 'artifacts-limits',
    args: ['--max-sessions', '2', '--http-listen', '127.0.0.1:0', '--max-output-kept-mb', '1', '--max-output-bytes', '1000',
      '--output-head-bytes', '400', '--output-tail-bytes', '400'],
  });
  try {
    const c = (name, args) => small.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    const one = ok(await c('upload_file', { filename: 'a.txt', content_base64: b64('a') }));
    ok(await c('upload_file', { filename: 'a.txt', content_base64: b64('a') }));
    const third = await c('upload_file', { filename: 'a.txt', content_base64: b64('a') });
    assert.equal(third.isError, true);
    assert.equal(sc(third).error, 'max_sessions');
    assert.match(sc(third).message, /^Maximum 2 concurrent sessions reached\. Close an existing session first\. Held by: 2 of your sessions /);
    // Uploading into an existing session is still fine.
    ok(await c('upload_file', { session_id: one.session_id, filename: 'b.txt', content_base64: b64('b') }));

    // 2.2 MB of output with 1 MiB kept: the first and last 512 KiB stay, the marker sits between.
    const r = ok(await c('run_python', { session_id: one.session_id, code: "print('A' * 600000 + 'B' * 1000000 + 'C' * 600000)" }));
    assert.equal(r.stdout_truncated, true);
    const total = 2200001;
    assert.equal(r.stdout, 'A'.repeat(400) + `\n\n[... truncated ${total - 800} characters ...]\n\n` + 'C'.repeat(399) + '\n');
    const saved = await (await fetch(r.stdout_url)).text();
    const half = 512 * 1024;
    assert.equal(saved, 'A'.repeat(half) + `\n\n[... truncated ${total - 2 * half} characters ...]\n\n` + 'C'.repeat(half - 1) + '\n');
  } finally {
    await small.close();
  }
});

test('the default download port 8080, when taken, falls back to a free port; an explicit taken port fails clearly', async () => {
  const net = await import('node:net');
  // This test holds 8080 itself, so that nobody frees it halfway: another process's server
  // may have it for a while (waited for, 30 s at most; after that, taken either way).
  let blocker;
  let held = false;
  for (let i = 0; i < 150 && !held; i++) {
    blocker = net.createServer();
    held = await new Promise((resolve) => {
      blocker.once('error', () => resolve(false));
      blocker.listen(8080, '127.0.0.1', () => resolve(true));
    });
    if (!held) await new Promise((r) => setTimeout(r, 200));
  }
  try {
    const fallback = await startServer({ name: 'port-fallback', env: { CELLGATE_HTTP_LISTEN: undefined } });
    try {
      const up = ok(await fallback.client.callTool({ name: 'upload_file', arguments: { filename: 'p.txt', content_base64: b64('port') } }));
      const url = new URL(up.download_url);
      assert.notEqual(url.port, '8080');
      assert.equal(await (await fetch(up.download_url)).text(), 'port');
      assert.match(fallback.stderrText(), /using a free port instead/);
    } finally {
      await fallback.close();
    }
    await assert.rejects(startServer({ name: 'port-explicit', args: ['--http-listen', '127.0.0.1:8080'], env: { CELLGATE_HTTP_LISTEN: undefined } }),
      /cannot listen on 127\.0\.0\.1:8080/);
  } finally {
    if (held) await new Promise((r) => blocker.close(r));
  }
});
