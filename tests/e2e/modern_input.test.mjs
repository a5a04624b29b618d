// input() on MCP 2026-07-28 (issue 16, point 3): the server may not send the client a
// request, so a cell that wants a line its stdin lacks answers the call input_required (an
// elicitation/create under inputRequests, with a requestState); the official SDK v2 client
// fulfils it with its elicitation handler and retries the call with inputResponses, and the
// answer reaches the cell. A declined one is EOF; a client that declared no elicitation gets
// EOF at once. Over stdio and Streamable HTTP.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { serverBinary, startHttpServer } from './lib.mjs';

const PIN = { mode: { pin: '2026-07-28' } };
const asked = [];
let answers = [];

function v2Client(elicit) {
  const client = new Client({ name: 'cellgate-e2e-v2', version: '0.0.0' },
    { capabilities: elicit ? { elicitation: { form: {} } } : {}, versionNegotiation: PIN });
  if (elicit)
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      const next = answers.shift();
      return next === undefined ? { action: 'decline' } : { action: 'accept', content: { input: next } };
    });
  return client;
}

const structured = (result) => result.structuredContent;

function scenarios(get) {
  test('input() asks through input_required; the answers reach the cell, a decline is EOF', async () => {
    const { client } = get();
    asked.length = 0;
    answers = ['Ada', '36'];
    const r = structured(await client.callTool({ name: 'execute_code', arguments: { language: 'python',
      session_id: 'mrtr', code: "a = input('Name? ')\nb = input('Age? ')\nprint('hi', a, b)\ninput('More? ')" } }));
    assert.equal(asked.length, 3, JSON.stringify(asked));
    assert.match(asked[0].message, /Name\?/);
    assert.match(asked[1].message, /Age\?/);
    assert.match(r.stdout, /hi Ada 36/);
    assert.match(r.stderr, /EOFError/, JSON.stringify(r));
    // The session goes on as before.
    const again = structured(await client.callTool({ name: 'execute_code', arguments: { language: 'python',
      session_id: 'mrtr', code: 'print(a)' } }));
    assert.equal(again.stdout, 'Ada\n');
  });
}

describe('over stdio', () => {
  let client, stateDir;
  before(async () => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-mrtr-'));
    client = v2Client(true);
    await client.connect(new StdioClientTransport({ command: serverBinary(),
      args: ['mcp', '--state-dir', stateDir, '--http-listen', 'off'], env: { ...process.env, CELLGATE_POOL: '0' },
      stderr: 'pipe' }));
    assert.equal(client.getProtocolEra(), 'modern');
  });
  after(async () => { await client?.close(); fs.rmSync(stateDir, { recursive: true, force: true }); });
  scenarios(() => ({ client }));
});

describe('over Streamable HTTP', () => {
  let server, client, plain;
  before(async () => {
    server = await startHttpServer();
    client = v2Client(true);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    plain = v2Client(false);
    await plain.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  after(async () => { await client?.close(); await plain?.close(); await server?.close(); });
  scenarios(() => ({ client }));

  test('a client that declared no elicitation gets EOF at once', async () => {
    const r = structured(await plain.callTool({ name: 'execute_code', arguments: { language: 'python',
      code: "input('x? ')" } }));
    assert.match(r.stderr, /EOFError|StdinNotImplementedError|input\(\) needs stdin/, JSON.stringify(r));
  });
});
