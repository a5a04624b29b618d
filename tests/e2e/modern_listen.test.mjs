// Resource subscriptions on MCP 2026-07-28 (issue 16, point 4): subscriptions/listen with
// resourceSubscriptions, through the official SDK v2 client's listen(): the server
// acknowledges what it honours, and a run that creates, changes or deletes a listened file
// sends notifications/resources/updated on that stream (tagged with its subscriptionId);
// a file not listened to sends none, and a closed subscription hears nothing more. Over
// stdio and Streamable HTTP.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { serverBinary, startHttpServer } from './lib.mjs';

const PIN = { mode: { pin: '2026-07-28' } };
const uriOf = (sid, file) => `cellgate://sessions/${sid}/files/${file}`;
const updates = [];

function v2Client() {
  const client = new Client({ name: 'cellgate-e2e-listen', version: '0.0.0' }, { versionNegotiation: PIN });
  client.setNotificationHandler('notifications/resources/updated', (n) => { updates.push(n.params.uri); });
  return client;
}

const run = (client, sid, code) =>
  client.callTool({ name: 'execute_code', arguments: { language: 'python', session_id: sid, code } });

async function until(predicate, ms = 10000) {
  const end = Date.now() + ms;
  while (!predicate() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return predicate();
}

function scenarios(get) {
  test('a listened file: created, changed and deleted are each notified; others are not', async () => {
    const client = get();
    const sid = 'sess_listen01';
    await run(client, sid, 'pass'); // the session exists
    updates.length = 0;
    const sub = await client.listen({ resourceSubscriptions: [uriOf(sid, 'watched.txt')] });
    assert.deepEqual(sub.honoredFilter?.resourceSubscriptions ?? sub.honoredFilter?.notifications?.resourceSubscriptions,
      [uriOf(sid, 'watched.txt')], JSON.stringify(sub.honoredFilter));
    await run(client, sid, "open('/mnt/data/watched.txt', 'w').write('1')\nopen('/mnt/data/other.txt', 'w').write('x')");
    assert.ok(await until(() => updates.length >= 1), 'created: notified');
    await run(client, sid, "open('/mnt/data/watched.txt', 'w').write('22')");
    assert.ok(await until(() => updates.length >= 2), 'changed: notified');
    await run(client, sid, "import os\nos.remove('/mnt/data/watched.txt')");
    assert.ok(await until(() => updates.length >= 3), 'deleted: notified');
    assert.deepEqual(updates, [uriOf(sid, 'watched.txt'), uriOf(sid, 'watched.txt'), uriOf(sid, 'watched.txt')],
      'only the listened file');
    await sub.close();
    await new Promise((r) => setTimeout(r, 300));
    await run(client, sid, "open('/mnt/data/watched.txt', 'w').write('3')");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(updates.length, 3, 'nothing after the subscription closed');
  });
}

describe('over stdio', () => {
  let client, stateDir;
  before(async () => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-listen-'));
    client = v2Client();
    await client.connect(new StdioClientTransport({ command: serverBinary(),
      args: ['mcp', '--state-dir', stateDir, '--http-listen', 'off'], env: { ...process.env, CELLGATE_POOL: '0' },
      stderr: 'pipe' }));
  });
  after(async () => { await client?.close(); fs.rmSync(stateDir, { recursive: true, force: true }); });
  scenarios(() => client);
});

describe('over Streamable HTTP', () => {
  let server, client;
  before(async () => {
    server = await startHttpServer();
    client = v2Client();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  after(async () => { await client?.close(); await server?.close(); });
  scenarios(() => client);
});
