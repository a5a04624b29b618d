// Workspace files as MCP resources (issue 16, point 4), through the official SDK client:
// resources/list and templates/list, resources/read (text, binary, a percent-encoded name,
// a file over the read limit answered with its download URL), the path rules (a symlink the
// sandbox planted, '..') and subscriptions (notifications/resources/updated after a run that
// changes a subscribed file; none after unsubscribing). Over HTTP, one client cannot list or
// read another's files.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ListPromptsResultSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { callExec, expectStatus, startHttpServer, startServer } from './lib.mjs';

const READ_LIMIT = 65536;
let server;
let client;
const updates = [];

before(async () => {
  server = await startServer({ name: 'resources', args: ['--http-listen', '127.0.0.1:0', '--max-artifact-read-bytes', String(READ_LIMIT)] });
  client = server.client;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
});

after(async () => {
  await server?.close();
});

const SID = 'sess_resources001';
const uriOf = (rel, sid = SID) => `cellgate://sessions/${sid}/files/${rel.split('/').map(encodeURIComponent).join('/')}`;
const run = async (code, sid = SID) => expectStatus(await callExec(client, { language: 'python', code, session_id: sid }), 'success', server);

test('the server says it has resources with subscriptions, and no prompts outside the conformance profile', async () => {
  assert.deepEqual(client.getServerCapabilities().resources, { subscribe: true, listChanged: false });
  assert.equal(client.getServerCapabilities().prompts, undefined);
  await assert.rejects(client.request({ method: 'prompts/list', params: {} }, ListPromptsResultSchema), /Method not found/);
});

test("list and templates: the session's files, with the scheme's template", async () => {
  await run([
    "import os",
    "open('/mnt/data/notes.txt', 'w').write('hello resources\\n')",
    "os.makedirs('/mnt/data/sub dir', exist_ok=True)",
    "open('/mnt/data/sub dir/data é.csv', 'w').write('a,b\\n1,2\\n')",
    "open('/mnt/data/pixel.png', 'wb').write(bytes([0x89, 80, 78, 71, 13, 10, 26, 10]) + bytes(range(256)))",
  ].join('\n'));
  const { resources } = await client.listResources();
  const byUri = Object.fromEntries(resources.map((r) => [r.uri, r]));
  assert.ok(byUri[uriOf('notes.txt')], JSON.stringify(resources));
  assert.equal(byUri[uriOf('notes.txt')].mimeType, 'text/plain');
  assert.equal(byUri[uriOf('notes.txt')].size, 16);
  assert.equal(byUri[uriOf('sub dir/data é.csv')].name, 'sub dir/data é.csv');
  assert.match(uriOf('sub dir/data é.csv'), /sub%20dir\/data%20%C3%A9\.csv$/);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'cellgate://sessions/{session_id}/files/{path}'));
});

test('read: text, binary as base64, a percent-encoded name', async () => {
  let r = await client.readResource({ uri: uriOf('notes.txt') });
  assert.deepEqual(r.contents, [{ uri: uriOf('notes.txt'), mimeType: 'text/plain', text: 'hello resources\n' }]);
  r = await client.readResource({ uri: uriOf('pixel.png') });
  assert.equal(r.contents[0].mimeType, 'image/png');
  assert.equal(Buffer.from(r.contents[0].blob, 'base64').length, 8 + 256);
  r = await client.readResource({ uri: uriOf('sub dir/data é.csv') });
  assert.equal(r.contents[0].text, 'a,b\n1,2\n');
});

test("a run's result links the files it made as resources", async () => {
  const r = await callExec(client, { language: 'python', code: "open('/mnt/data/made.txt', 'w').write('made')", session_id: SID });
  expectStatus(r, 'success', server);
  const link = r.content.find((c) => c.type === 'resource_link' && c.uri === uriOf('made.txt'));
  assert.deepEqual(link, { type: 'resource_link', uri: uriOf('made.txt'), name: 'made.txt', mimeType: 'text/plain', size: 4 });
  assert.equal((await client.readResource({ uri: link.uri })).contents[0].text, 'made');
});

test('read refuses what read_artifact refuses: a planted symlink, .., unknown sessions and files', async () => {
  await run("import os\nos.symlink('/etc/passwd', '/mnt/data/passwd-link')\nos.symlink('/etc', '/mnt/data/etc-link')");
  for (const uri of [
    uriOf('passwd-link'),
    uriOf('etc-link') + '/passwd',
    `cellgate://sessions/${SID}/files/../../../../etc/passwd`,
    `cellgate://sessions/${SID}/files/%2e%2e/%2e%2e/etc/passwd`,
    `cellgate://sessions/${SID}/files/missing.txt`,
    'cellgate://sessions/sess_nosuchone01/files/notes.txt',
    'file:///etc/passwd',
  ]) {
    await assert.rejects(client.readResource({ uri }), (err) => {
      assert.ok([-32002, -32602].includes(err.code), `${uri}: ${err.code} ${err.message}`);
      assert.ok(!/root:x:0:0/.test(err.message), 'no host file content');
      return true;
    }, uri);
  }
  const { resources } = await client.listResources();
  assert.ok(!resources.some((r) => /link/.test(r.uri)), 'symlinks are not listed');
});

test('a file over the read limit is refused with its download URL', async () => {
  await run(`open('/mnt/data/big.bin', 'wb').write(b'x' * ${READ_LIMIT * 2})`);
  await assert.rejects(client.readResource({ uri: uriOf('big.bin') }), (err) => {
    assert.match(err.message, /131072 bytes, over the 65536-byte read limit/);
    assert.match(err.message, /download it: http:\/\/127\.0\.0\.1:\d+\/files\/sess_resources001\/big\.bin\?token=/);
    return true;
  });
});

test('subscribe: a run that changes the file notifies; after unsubscribe it does not', async () => {
  const uri = uriOf('watched.txt');
  await client.subscribeResource({ uri });
  updates.length = 0;
  await run("open('/mnt/data/watched.txt', 'w').write('one')");
  await run("open('/mnt/data/other.txt', 'w').write('not watched')");
  assert.deepEqual(updates, [uri]);
  await run("open('/mnt/data/watched.txt', 'a').write('two')");
  assert.deepEqual(updates, [uri, uri]);
  await run("import os\nos.remove('/mnt/data/watched.txt')");
  assert.deepEqual(updates, [uri, uri, uri]);
  await client.unsubscribeResource({ uri });
  await run("open('/mnt/data/watched.txt', 'w').write('three')");
  assert.deepEqual(updates, [uri, uri, uri]);
});

test("over HTTP, one client cannot list or read another client's files", async () => {
  const http = await startHttpServer();
  try {
    const { client: a } = await http.connect();
    const { client: b } = await http.connect();
    await callExec(a, { language: 'python', code: "open('/mnt/data/mine.txt', 'w').write('a secret')", session_id: 'sess_resourceshta' });
    const uri = 'cellgate://sessions/sess_resourceshta/files/mine.txt';
    assert.equal((await a.readResource({ uri })).contents[0].text, 'a secret');
    assert.deepEqual((await b.listResources()).resources, []);
    await assert.rejects(b.readResource({ uri }), (err) => err.code === -32002);
    // a subscription by B to A's file never tells B anything
    const seen = [];
    const mine = [];
    b.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => seen.push(n.params.uri));
    a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => mine.push(n.params.uri));
    await b.subscribeResource({ uri });
    await a.subscribeResource({ uri });
    await callExec(a, { language: 'python', code: "open('/mnt/data/mine.txt', 'w').write('changed')", session_id: 'sess_resourceshta' });
    assert.deepEqual(seen, []);
    assert.deepEqual(mine, [uri], "the owner hears of it, on the call's stream");
  } finally {
    await http.close();
  }
});
