// Results a client can take and results that tell the truth: every result within the result
// budget (big charts as links to their saved files, each payload once), and what the next
// call says after its kernel died between calls or a JavaScript cell outran its interrupt.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterEach, beforeEach, test } from 'node:test';

import { callExec, expectStatus, sc, show, startHttpServer, startServer } from './lib.mjs';

// These tests are about the result budget (--max-result-bytes): the image budget, which would
// preview these charts first (images.test.mjs), is raised out of the way.
const NO_IMAGE_BUDGET = ['--image-budget', String(1 << 30)];

const BUDGET = 1024 * 1024; // the stdio default of --max-result-bytes

let server;
let client;
let longestLine = 0; // the longest JSON-RPC line the current server wrote

// Each test has its own server: a result that kills the client must not take the next test with it.
beforeEach(async () => {
  server = await startServer({ args: NO_IMAGE_BUDGET });
  client = server.client;
  longestLine = 0;
  // The SDK's own reader still parses every line; this listener only measures them.
  let pending = 0;
  server.transport._process.stdout.on('data', (chunk) => {
    let start = 0;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) {
      longestLine = Math.max(longestLine, pending + i - start);
      pending = 0;
      start = i + 1;
    }
    pending += chunk.length - start;
  });
});

afterEach(async () => {
  await server?.close();
});

const call = (name, args, timeout = 300000) => client.callTool({ name, arguments: args }, undefined, { timeout });

/** GETs a download URL (only ever this machine's loopback listener) and returns its bytes. */
async function download(url) {
  assert.match(url, /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+\//, `not a loopback URL: ${url}`);
  const response = await fetch(url);
  assert.equal(response.status, 200, `GET ${url}`);
  return Buffer.from(await response.arrayBuffer());
}

/** The sha256 of a workspace file, computed inside the sandbox. */
async function sandboxSha256(sid, path) {
  const r = await callExec(client, {
    language: 'python',
    code: `import hashlib\nprint(hashlib.sha256(open(${JSON.stringify(path)}, 'rb').read()).hexdigest())`,
    session_id: sid,
  });
  return expectStatus(r, 'success', server).stdout.trim();
}

/** Waits (at most 10 s) until host process PID has exited and been reaped by its parent. */
async function gone(pid) {
  for (let i = 0; i < 200; i++) {
    if (!fs.existsSync(`/proc/${pid}`)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`process ${pid} still exists after SIGKILL`);
}

/** Asserts that a result's serialized size and the longest line so far are within the budget. */
function assertWithinBudget(r) {
  const size = Buffer.byteLength(JSON.stringify(r));
  assert.ok(size < BUDGET, `result is ${size} bytes, over the ${BUDGET}-byte budget`);
  assert.ok(longestLine < BUDGET, `the server wrote a ${longestLine}-byte line, over the ${BUDGET}-byte budget`);
  return size;
}

test('a small chart comes back once: an image block, and the output names its saved file', async () => {
  const sid = 'sess_e2eresult001';
  const r = await callExec(client, {
    language: 'python',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()',
    session_id: sid,
  });
  const s = expectStatus(r, 'success', server);
  const images = r.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 1, show(r, server));
  const png = Buffer.from(images[0].data, 'base64');
  const out = s.outputs.find((o) => o.type === 'display_data');
  assert.ok(out, show(r, server));
  assert.equal(out.data['image/png'], undefined, 'the PNG must not be repeated in structuredContent.outputs');
  assert.deepEqual(out.omitted, ['image/png']);
  assert.equal(out.mime_type, 'image/png');
  assert.equal(out.size_bytes, png.length);
  assert.match(out.path, /^\/mnt\/data\/outputs\/exec_[0-9a-f]{12}-1\.png$/);
  assert.deepEqual(await download(out.download_url), png);
  const probe = images[0].data.slice(0, 200);
  assert.equal(JSON.stringify(r).split(probe).length - 1, 1, 'the base64 appears once in the result');
});

test('a 16×16-inch imshow chart: the call succeeds under the budget, with a link to the whole file', async () => {
  const sid = 'sess_e2eresult002';
  const r = await callExec(client, {
    language: 'python',
    code: 'import numpy as np, matplotlib.pyplot as plt\nplt.figure(figsize=(16, 16))\nplt.imshow(np.random.rand(1600, 1600))\nplt.show()',
    session_id: sid,
    timeout: 120,
  });
  const s = expectStatus(r, 'success', server);
  const size = assertWithinBudget(r);
  const out = s.outputs.find((o) => o.type === 'display_data' && o.path);
  assert.ok(out, show(r, server));
  assert.equal(out.data['image/png'], undefined);
  const text = r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  assert.match(text, /left out/, show(r, server));
  assert.ok(text.includes(out.download_url), `the note links the file: ${show(r, server)}`);
  const bytes = await download(out.download_url);
  assert.equal(bytes.length, out.size_bytes);
  assert.ok(bytes.length > BUDGET, `the chart is ${bytes.length} bytes`);
  assert.equal(crypto.createHash('sha256').update(bytes).digest('hex'), await sandboxSha256(sid, out.path));
  process.stderr.write(`16×16 imshow: PNG ${bytes.length} bytes, result ${size} bytes\n`);
});

test('a ~48 MB PNG display (limits raised by the operator): the call succeeds, the server survives, the link has every byte', async () => {
  // By default the server refuses a kernel message over 8 MB (floods.test.mjs); an
  // operator may raise that, and the result still stays within its budget.
  await server.close();
  server = await startServer({ args: [...NO_IMAGE_BUDGET, '--max-message-mb', '128', '--max-display-mb', '128'] });
  client = server.client;
  const sid = 'sess_e2eresult003';
  const code = [
    'import os, struct, zlib',
    'from IPython.display import Image, display',
    'def chunk(kind, data):',
    "    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))",
    'w, h = 4096, 3900',
    "raw = b''.join(b'\\x00' + os.urandom(w * 3) for _ in range(h))",
    "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 0)) + chunk(b'IEND', b'')",
    "open('/tmp/big.sha', 'w').write(__import__('hashlib').sha256(png).hexdigest())",
    "display(Image(data=png, format='png'))",
  ].join('\n');
  const r = await callExec(client, { language: 'python', code, session_id: sid, timeout: 240 });
  const s = expectStatus(r, 'success', server);
  const size = assertWithinBudget(r);
  const out = s.outputs.find((o) => o.type === 'display_data' && o.path);
  assert.ok(out, show(r, server));
  assert.ok(out.size_bytes > 45e6, `the PNG is ${out.size_bytes} bytes`);
  const bytes = await download(out.download_url);
  const want = expectStatus(await callExec(client, { language: 'python', code: "print(open('/tmp/big.sha').read())", session_id: sid }), 'success', server);
  assert.equal(crypto.createHash('sha256').update(bytes).digest('hex'), want.stdout.trim());
  process.stderr.write(`~48 MB PNG: result ${size} bytes\n`);
  // The server and its sessions are alive.
  const again = await callExec(client, { language: 'python', code: 'print(6 * 7)', session_id: sid });
  assert.equal(expectStatus(again, 'success', server).stdout, '42\n');
});

test('over Streamable HTTP the same budget holds, set here by --max-result-bytes', async () => {
  const budget = 150000;
  const http = await startHttpServer({ args: [...NO_IMAGE_BUDGET, '--max-result-bytes', String(budget)] });
  try {
    const { client: remote } = await http.connect();
    const sid = 'sess_e2eresult007';
    const code = "import numpy as np, matplotlib.pyplot as plt\nprint('x' * 90000)\nplt.imshow(np.random.rand(300, 300))\nplt.show()";
    const r = await callExec(remote, { language: 'python', code, session_id: sid, timeout: 120 });
    const s = expectStatus(r, 'success', http);
    const size = Buffer.byteLength(JSON.stringify(r));
    assert.ok(size < budget, `result is ${size} bytes, over ${budget}`);
    const link = r.content.find((c) => c.type === 'resource_link');
    assert.ok(link, `the chart is a resource_link: ${show(r)}`);
    assert.equal(link.mimeType, 'image/png');
    assert.deepEqual((await download(link.uri)).length, link.size);
    // stdout comes twice (structuredContent and the text block): one of them is cut.
    const note = r.content.at(-1).text;
    assert.match(note, /150000-byte result budget/);
    assert.match(note, /(stdout|content\[0\]\.text): \d+ of \d+ bytes kept/);
    assert.ok([s.stdout, r.content[0].text].some((t) => t.includes('[... truncated ')), 'a cut carries the marker');
  } finally {
    await http.close();
  }
});

test('read_artifact of a file larger than the budget answers within it, with the download link', async () => {
  const sid = 'sess_e2eresult004';
  const make = "import os\nopen('noise.bin', 'wb').write(os.urandom(3 * 1024 * 1024))";
  expectStatus(await callExec(client, { language: 'python', code: make, session_id: sid }), 'success', server);
  const r = await call('read_artifact', { session_id: sid, path: '/mnt/data/noise.bin' });
  assertWithinBudget(r);
  const s = sc(r);
  assert.equal(s.error, 'artifact_too_large', show(r, server));
  assert.equal(s.size_bytes, 3 * 1024 * 1024);
  const bytes = await download(s.download_url);
  assert.equal(crypto.createHash('sha256').update(bytes).digest('hex'), await sandboxSha256(sid, '/mnt/data/noise.bin'));
});

test('a kernel killed between calls is restarted and the next code runs, saying state was lost', async () => {
  const started = sc(await call('start_session', { language: 'python' }));
  const sid = started.session_id;
  assert.ok(started.pid > 0, JSON.stringify(started));
  expectStatus(await call('send_to_session', { session_id: sid, code: 'x = 1' }), 'success', server);
  process.kill(started.pid, 'SIGKILL');
  await gone(started.pid);
  const r = await call('send_to_session', { session_id: sid, code: "print('ran')" });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'ran\n', show(r, server));
  assert.equal(s.kernel_restarted, true, show(r, server));
  assert.match(s.notice, /restarted before this code ran/, show(r, server));
  assert.doesNotMatch(JSON.stringify(r), /died while running/);
  assert.match(r.content[0].text, /restarted before this code ran/);

  // A cell that kills its own kernel after it returned: the same for the call after it.
  const late = "import os, threading\nthreading.Timer(0.3, lambda: os.kill(os.getpid(), 9)).start()\ny = 2";
  expectStatus(await call('send_to_session', { session_id: sid, code: late }), 'success', server);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const next = await call('send_to_session', { session_id: sid, code: "print('y' in globals())" });
  const n = expectStatus(next, 'success', server);
  assert.equal(n.stdout, 'False\n', show(next, server));
  assert.equal(n.kernel_restarted, true);
  const calm = expectStatus(await call('send_to_session', { session_id: sid, code: 'print(1)' }), 'success', server);
  assert.equal(calm.kernel_restarted, false);
  assert.equal(calm.notice, undefined);
});

test('outputs that the IOPub thread of ipykernel sends seconds after the execute_reply are in the result', async () => {
  // A loaded machine delays ipykernel's IOPub thread behind its shell reply. Here it is made
  // to: the thread sleeps 4 s, and the end-of-cell flush does not wait for it, so the reply
  // comes 4 s before the display and the idle status. The run ended 2 s after the reply
  // before, and the display was lost.
  const r = await callExec(client, {
    language: 'python',
    session_id: 'sess_e2eresult010',
    code: [
      'import sys, time',
      'from IPython.display import display, HTML',
      'sys.stdout.flush_timeout = sys.stderr.flush_timeout = 0.01',
      'get_ipython().kernel.iopub_thread.io_loop.add_callback(time.sleep, 4)',
      "display(HTML('<b>late</b>'))",
    ].join('\n'),
    timeout: 60,
  });
  const s = expectStatus(r, 'success', server);
  assert.ok(JSON.stringify(s.outputs ?? []).includes('<b>late</b>'), `the display is in the result: ${show(r, server)}`);
});

test('a JavaScript cell that blocks its event loop past the heartbeat misses runs to its end', async () => {
  // Atomics.wait blocks tslab's event loop, heartbeats included, for 8 s without using a
  // core: 5 missed heartbeats ended such a cell as "stopped answering heartbeats" before.
  const r = await callExec(client, {
    language: 'javascript',
    code: "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 8000);\nconsole.log('after the wait')",
    session_id: 'sess_e2eresult009',
    timeout: 60,
  });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'after the wait\n');
  assert.equal(s.kernel_restarted ?? false, false);
});

test('a JavaScript loop after an await in an interrupted kernel is a timeout', async () => {
  const sid = 'sess_e2eresult006';
  const first = await callExec(client, { language: 'javascript', code: 'while (true) {}', session_id: sid, timeout: 2 });
  expectStatus(first, 'timeout', server);
  const r = await callExec(client, {
    language: 'javascript',
    code: 'await new Promise((resolve) => setTimeout(resolve, 10));\nwhile (true) {}',
    session_id: sid,
    timeout: 5, // past the 5 heartbeat misses that ended it as "died" before
  });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.error_code, 'EXECUTION_TIMEOUT', show(r, server));
  assert.equal(s.timed_out, true);
  assert.equal(s.exit_code, -1);
  assert.match(s.error_message, /timed out after 5 seconds/);
  const next = await callExec(client, { language: 'javascript', code: '6 * 7', session_id: sid });
  assert.equal(expectStatus(next, 'success', server).returnValue, 42);
});
