// The workspace's changes followed as they happen (issue 29, point 1): on the session's own
// file system the server learns what a run changed from fanotify events, not a walk of
// everything. A run that makes more events than the kernel queues (9,000 files created and
// renamed: 27,000 events, over its 16,384) is walked in full and says so in a notice; the
// lists stay exact, and later runs that change nothing or one file report exactly that,
// with no notice. resources/list pages through a session's files from its index.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, show, startServer } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer({ name: 'workspace_track' });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const SID = 'sess_wstrack0001';
const run = async (code) => {
  const r = await callExec(client, { language: 'python', code, session_id: SID }, { timeoutMs: 300000 });
  return { r, s: expectStatus(r, 'success', server) };
};

test('a run that overflows the event queue is walked in full and says so; later runs are exact and quiet', async () => {
  let { r, s } = await run("open('/mnt/data/keep.txt', 'w').write('k')");
  assert.deepEqual(s.artifacts_created, ['keep.txt'], show(r));
  assert.equal(s.notice, undefined, show(r));

  ({ r, s } = await run([
    'import os',
    "os.makedirs('/mnt/data/many')",
    'for i in range(9000):',
    "    open(f'/mnt/data/many/a{i:05d}.txt', 'w').close()",
    "    os.rename(f'/mnt/data/many/a{i:05d}.txt', f'/mnt/data/many/{i:05d}.txt')",
  ].join('\n')));
  assert.match(s.notice ?? '', /event queue overflowed.*walked \/mnt\/data in full/s, show(r));
  assert.match(r.content[0].text, /\[notice\].*event queue overflowed/s, 'the notice is in the text block too');
  const want = Array.from({ length: 9000 }, (_, i) => `many/${String(i).padStart(5, '0')}.txt`);
  assert.deepEqual(s.artifacts_created, want, 'created: exactly the files left, sorted');
  assert.deepEqual(s.artifacts_modified, []);
  assert.deepEqual(s.artifacts_deleted, []);

  ({ r, s } = await run('x = 1'));
  assert.equal(s.notice, undefined, show(r));
  assert.deepEqual([s.artifacts_created, s.artifacts_modified, s.artifacts_deleted], [[], [], []], show(r));

  ({ r, s } = await run("open('/mnt/data/keep.txt', 'a').write('more')"));
  assert.equal(s.notice, undefined, show(r));
  assert.deepEqual([s.artifacts_created, s.artifacts_modified, s.artifacts_deleted], [[], ['keep.txt'], []], show(r));
});

test('resources/list pages through the index: every file once, in order, with stable cursors', async () => {
  const seen = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    seen.push(...page.resources.map((x) => x.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.equal(seen.length, 9001, `files listed: ${seen.length}`);
  assert.equal(new Set(seen).size, seen.length, 'no file twice');
  assert.deepEqual(seen, [...seen].sort(), 'sorted by path');
  assert.ok(seen.includes('keep.txt'));
  assert.equal(pages, 19, 'pages of 500');
  const again = await client.listResources({ cursor: '500' });
  assert.deepEqual(again.resources.map((x) => x.name), seen.slice(500, 1000), 'a cursor names the same page again');
});
