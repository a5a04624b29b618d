// Hostile corpus, shares per owner (issue 23, point 10): with one token per client
// (`--http-token A,B`), client A takes what it can of the server's MCP sessions and
// subscriptions/listen slots, and client B must still get in. A gets its share
// (--max-mcp-sessions-per-client, 256 by default; --max-listens-per-client, 8 here through
// its variable) and then a clear refusal naming the limit; B still initializes, calls a
// tool and listens. (c88e380 let A take all 1024 MCP sessions, and B's initialize got 503;
// its 256 listen slots were the server's, whoever held them.) A's flood is raw HTTP (a
// thousand initialize requests); B is the official SDK client, v1 for 2025-11-25 and v2
// for 2026-07-28's listen.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';

import { caseTable } from './corpus.mjs';
import { startHttpServer } from './lib.mjs';

const kase = caseTable('corpus_mcp_owners');
const TOKEN_A = 'corpus-owner-a-0123456789abcdef';
const TOKEN_B = 'corpus-owner-b-0123456789abcdef';
const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'corpus-owner-a', version: '1' } } };

// Two servers: A's 2026-07-28 requests are a client of A's too (one per token), which the
// first case's flood leaves no room for.
const startTwoTokens = () => startHttpServer({ args: ['--http-token', `${TOKEN_A},${TOKEN_B}`],
  env: { CELLGATE_MAX_LISTENS_PER_CLIENT: '8' } });
let server, listenServer;
before(async () => {
  server = await startTwoTokens();
  listenServer = await startTwoTokens();
});
after(async () => {
  await server?.close();
  await listenServer?.close();
});

const bearer = (token) => ({ Authorization: `Bearer ${token}` });

// A raw initialize with TOKEN: { status, body }.
async function initialize(token) {
  const res = await fetch(server.url, { method: 'POST', body: JSON.stringify(INIT), headers: {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...bearer(token) } });
  return { status: res.status, body: await res.text() };
}

kase('token A opens MCP sessions until refused (at most 1100 initialize)', 'A refused with 429 at its share (--max-mcp-sessions-per-client 256); B initializes and calls a tool',
  async () => {
    let opened = 0;
    let refused = null;
    for (let i = 0; i < 1100 && !refused; i++) {
      const r = await initialize(TOKEN_A);
      if (r.status === 200) opened++;
      else refused = r;
    }
    // B first: what A's flood must not take from it.
    const b = new (await import('@modelcontextprotocol/sdk/client/index.js')).Client({ name: 'corpus-owner-b', version: '1' });
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    let bSays;
    try {
      await b.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: bearer(TOKEN_B) } }));
      const r = await b.callTool({ name: 'list_sessions', arguments: {} });
      bSays = `B initialized and called list_sessions (isError ${r.isError ?? false})`;
    } catch (err) {
      bSays = `B could not initialize: ${String(err.message ?? err).slice(0, 120)}`;
    } finally {
      await b.close().catch(() => {});
    }
    assert.ok(refused, `A opened ${opened} MCP sessions and was never refused`);
    assert.match(bSays, /^B initialized/, `A opened ${opened} (then ${refused.status}); ${bSays}`);
    assert.equal(refused.status, 429, `A opened ${opened}, then ${refused.status} ${refused.body.slice(0, 200)}`);
    assert.equal(opened, 256);
    assert.match(refused.body, /--max-mcp-sessions-per-client/);
    return `A: ${opened} opened, then ${refused.status} (${JSON.parse(refused.body).error.message.slice(0, 60)}…); ${bSays}`;
  });

// A 2026-07-28 client with TOKEN (the official SDK v2 client, pinned to that revision).
async function modernClient(token) {
  const client = new ClientV2({ name: 'corpus-owner-listen', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new TransportV2(new URL(listenServer.url), { requestInit: { headers: bearer(token) } }));
  return client;
}

kase('token A opens subscriptions/listen streams until refused (at most 20)', 'A refused at its share (--max-listens-per-client 8) with the limit named; B still listens',
  async () => {
    const a = await modernClient(TOKEN_A);
    const b = await modernClient(TOKEN_B);
    const subs = [];
    let refusal = null;
    try {
      for (let i = 0; i < 20 && !refusal; i++) {
        try {
          subs.push(await a.listen({ resourceSubscriptions: [`cellgate://sessions/sess_owner/files/f${i}.txt`] }, { timeout: 15000 }));
        } catch (err) {
          refusal = err;
        }
      }
      const aOpen = subs.length;
      let bSays;
      try {
        const sub = await b.listen({ resourceSubscriptions: ['cellgate://sessions/sess_owner/files/b.txt'] }, { timeout: 15000 });
        subs.push(sub);
        bSays = 'B listens';
      } catch (err) {
        bSays = `B refused: ${String(err.message ?? err).slice(0, 120)}`;
      }
      assert.ok(refusal, `A opened ${aOpen} listen streams and was never refused; ${bSays}`);
      assert.equal(bSays, 'B listens', `A opened ${aOpen}; ${bSays}`);
      assert.equal(aOpen, 8);
      assert.match(String(refusal.message), /--max-listens-per-client/);
      return `A: ${aOpen} open, then refused (${String(refusal.message).slice(0, 70)}…); ${bSays}`;
    } finally {
      for (const s of subs) await s.close().catch(() => {});
      await a.close().catch(() => {});
      await b.close().catch(() => {});
    }
  });
