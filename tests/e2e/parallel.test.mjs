// Twenty sessions at once through one MCP SDK client: each runs in its own sandbox and
// kernel, and every result, file and download belongs to the session that made it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startServer } from './lib.mjs';

const SESSIONS = 20;

let server;
let client;

before(async () => {
  server = await startServer({ name: 'parallel', args: ['--max-sessions', String(SESSIONS + 2), '--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 300000 });

function ok(result) {
  assert.equal(result.isError, false, `unexpected error: ${JSON.stringify(result).slice(0, 2000)}\n${server.stderrText().slice(-2000)}`);
  return result.structuredContent;
}

test(`${SESSIONS} sessions in parallel each get their own output, state and files`, async () => {
  const ids = Array.from({ length: SESSIONS }, (_, i) => `par-${String(i).padStart(2, '0')}`);

  // First calls all at once: twenty sandboxes and kernels start together.
  const first = await Promise.all(ids.map((id, i) => call('run_python', {
    session_id: id,
    code: `import os, time\nsecret = '${id}-' + os.urandom(4).hex()\ntime.sleep(0.2)\nopen('/mnt/data/mine.txt', 'w').write(secret)\nprint(secret)\n${i} * 1000`,
  })));
  const secrets = first.map((r, i) => {
    const s = ok(r);
    assert.equal(s.session_id, ids[i]);
    assert.match(s.stdout, new RegExp(`^${ids[i]}-[0-9a-f]{8}\\n$`), `session ${ids[i]} got: ${s.stdout}`);
    assert.equal(s.return_value['text/plain'], String(i * 1000));
    assert.deepEqual(s.artifacts.map((a) => a.path), ['/mnt/data/mine.txt']);
    return s.stdout.trim();
  });
  assert.equal(new Set(secrets).size, SESSIONS, 'every session made its own secret');

  // Second calls at once: each kernel kept its own state.
  const second = await Promise.all(ids.map((id) => call('run_python', { session_id: id, code: 'print(secret)' })));
  second.forEach((r, i) => assert.equal(ok(r).stdout, `${secrets[i]}\n`));

  // Files and downloads at once: each workspace holds only its own file.
  const reads = await Promise.all(ids.map((id) => call('read_artifact', { session_id: id, path: 'mine.txt' })));
  const urls = reads.map((r, i) => {
    const s = ok(r);
    assert.equal(Buffer.from(s.content_base64, 'base64').toString(), secrets[i]);
    return s.download_url;
  });
  const bodies = await Promise.all(urls.map(async (u) => (await fetch(u)).text()));
  assert.deepEqual(bodies, secrets);

  const listed = ok(await call('list_sessions', {})).sessions.map((s) => s.session_id).sort();
  assert.deepEqual(listed, ids);

  const closed = await Promise.all(ids.map((id) => call('close_session', { session_id: id })));
  closed.forEach((r) => assert.equal(ok(r).status, 'closed'));
  assert.deepEqual(ok(await call('list_sessions', {})).sessions, []);
});
