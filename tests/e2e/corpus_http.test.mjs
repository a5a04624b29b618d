// Hostile corpus, the HTTP listener (issue 23, point 5): a pre-auth slowloris. An attacker
// process keeps 300 connections open, each trickling one header byte per tick and never
// finishing its request, reopening every one the server closes, from one loopback address,
// from ten, or from 127.0.0.1 itself (the owner's address: on a shared host every local
// user connects from it). Meanwhile the owner, on 127.0.0.1, still gets an authenticated
// /mcp call, a download and a gateway request through; once the attacker stops reopening,
// every connection it holds is closed by the request deadline (--http-request-timeout,
// short here), however it trickles. Every loop is bounded by a count of ticks.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

import { sc, startHttpServer } from './lib.mjs';
import { caseTable } from './corpus.mjs';

const kase = caseTable('corpus_http');
const TOKEN = 'corpus-http-token-0123456789';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const CONNECTIONS = 300;
const TICK_MS = 500;
const DRAIN_TICKS = 60; // after the owner's requests: ticks for every held connection to close
const OWNER_MS = 60000; // the most any of the owner's requests may take before it counts as locked out

// The attacker, a process of its own (its bursts of connects never delay the owner's
// requests in this one): argv PORT SOURCES(comma-separated) COUNT TICK_MS MAX_TICKS REOPEN. Keeps
// COUNT connections spread over SOURCES, each sent a request line and a header it never
// ends, one more byte per tick; reopens what the server closes until it reads "stop" on
// stdin (or never, with REOPEN "once"), then only trickles. Prints {"tick","open","opened","closed"} each tick, and exits
// when every connection is closed or after MAX_TICKS.
const ATTACKER = `
const net = require('node:net');
const [port, sources, count, tickMs, maxTicks, mode] = process.argv.slice(1);
const from = sources.split(',');
const socks = new Array(Number(count)).fill(null);
let opened = 0, closed = 0, reopen = mode === 'reopen', tick = 0;
function open(i) {
  const s = net.connect({ host: '127.0.0.1', port: Number(port), localAddress: from[i % from.length] });
  s.on('connect', () => s.write('GET /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:' + port + '\\r\\nX-Slow: '));
  s.on('error', () => {});
  s.on('data', () => {});
  s.on('close', () => { closed++; if (socks[i] === s) socks[i] = null; });
  socks[i] = s;
  opened++;
}
require('node:readline').createInterface({ input: process.stdin }).on('line', (l) => { if (l === 'stop') reopen = false; });
for (let i = 0; i < socks.length; i++) open(i);
const timer = setInterval(() => {
  tick++;
  for (let i = 0; i < socks.length; i++) {
    if (socks[i]) { if (socks[i].readyState === 'open') socks[i].write('a'); }
    else if (reopen) open(i);
  }
  const open_ = socks.filter(Boolean).length;
  process.stdout.write(JSON.stringify({ tick, open: open_, opened, closed, reopen }) + '\\n');
  if ((!reopen && open_ === 0) || tick >= Number(maxTicks)) { clearInterval(timer); for (const s of socks) s?.destroy(); process.exit(0); }
}, Number(tickMs));
`;

// Starts the attacker against PORT from SOURCES (reopening what is closed when REOPEN). Returns { ticks (every status line so far),
// waitTicks(n), stop(), done (its last status once it exits) }.
function attack(port, sources, maxTicks, reopen) {
  const proc = spawn(process.execPath, ['-e', ATTACKER, String(port), sources.join(','), String(CONNECTIONS), String(TICK_MS), String(maxTicks), reopen ? 'reopen' : 'once'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const ticks = [];
  const waiters = [];
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    ticks.push(JSON.parse(line));
    while (waiters.length && waiters[0].until <= ticks.length) waiters.shift().resolve();
  });
  const done = new Promise((resolve) => proc.on('exit', () => resolve(ticks.at(-1))));
  return {
    ticks,
    waitTicks: (n) => new Promise((resolve) => {
      const until = ticks.length + n;
      waiters.push({ until, resolve });
      done.then(resolve);
    }),
    stop: () => proc.stdin.write('stop\n'),
    kill: () => proc.kill('SIGKILL'),
    done,
  };
}

// Rejects after OWNER_MS: the owner is locked out.
function bounded(what, promise) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer under the attack (locked out)`)), OWNER_MS); }),
  ]);
}

// The sample NAME{LABELS} of a /metrics scrape TEXT.
function sample(text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
}

const REASONS = ['per_address_limit', 'owner_reserve', 'connection_limit', 'evicted', 'request_timeout'];

// One case: a server with ENV (settings as variables, so that a server without them runs
// the same attack with its defaults) and a request deadline of TIMEOUT s, the attacker from
// SOURCES (reopening what is closed while the owner works, when REOPEN); the owner's
// requests from 127.0.0.1 while it holds its connections; then every held connection closed.
async function slowloris(sources, env, { reopen = true, timeout = 2 } = {}) {
  const server = await startHttpServer({ args: ['--http-token', TOKEN], env: { CELLGATE_HTTP_REQUEST_TIMEOUT: String(timeout), ...env } });
  const attacker = attack(server.port, sources, 400, reopen);
  try {
    await attacker.waitTicks(3);
    const held = attacker.ticks.at(-1);
    assert.ok(held && held.opened >= CONNECTIONS, `the attacker opened its connections: ${JSON.stringify(held)}`);
    // The owner, under the attack: an authenticated MCP session, a download, the gateway.
    const { client } = await bounded('the owner\'s MCP initialize', server.connect({ headers: AUTH }));
    const up = sc(await bounded('the owner\'s upload_file', client.callTool({ name: 'upload_file',
      arguments: { session_id: 'owner', filename: 'note.txt', content_base64: Buffer.from('still here\n').toString('base64') } }, undefined, { timeout: OWNER_MS })));
    assert.ok(up?.download_url, JSON.stringify(up));
    const download = await bounded('the owner\'s download', fetch(up.download_url));
    assert.equal(download.status, 200);
    assert.equal(await download.text(), 'still here\n');
    const gatewayToken = fs.readFileSync(path.join(server.stateDir, 'gateway-token'), 'utf8');
    const specs = await bounded('the owner\'s gateway request', fetch(`${server.origin}/api/kernelspecs`, { headers: { Authorization: `token ${gatewayToken}` } }));
    assert.equal(specs.status, 200);
    const during = attacker.ticks.at(-1);
    assert.ok(during.open > 0 && during.reopen === reopen, `the attacker still held connections during the owner's requests: ${JSON.stringify(during)}`);
    // Stop reopening: whatever the attacker still holds never completes its request, and
    // trickling does not keep it: every one is closed.
    attacker.stop();
    for (let i = 0; i < DRAIN_TICKS + 2 * timeout && attacker.ticks.at(-1).open > 0; i++) await attacker.waitTicks(1);
    const last = attacker.ticks.at(-1);
    assert.equal(last.open, 0, `every trickling connection closed: ${JSON.stringify(last)}`);
    const admin = fs.readFileSync(path.join(server.stateDir, 'admin-token'), 'utf8');
    const text = await (await fetch(`${server.origin}/metrics`, { headers: { Authorization: `Bearer ${admin}` } })).text();
    const counts = Object.fromEntries(REASONS.map((r) => [r, sample(text, 'cellgate_http_connections_closed_total', `reason="${r}"`)]));
    const total = REASONS.reduce((sum, r) => sum + counts[r], 0);
    assert.ok(counts.request_timeout >= 1, `some connections were closed by the request deadline: ${JSON.stringify(counts)}`);
    assert.ok(total >= last.opened, `every attacking connection was refused or closed by the policy: ${JSON.stringify(counts)} for ${last.opened} opened`);
    await client.close();
    return `${last.opened} attacking connections (${during.open} open during the owner's requests); owner: MCP call, download, gateway OK; closed: ${REASONS.map((r) => `${r} ${counts[r]}`).join(', ')}`;
  } finally {
    attacker.kill();
    await attacker.done;
    await server.close();
  }
}

kase('slowloris from one other loopback address (127.0.0.2), 300 connections trickling',
  'the per-address limit holds it; the owner\'s /mcp, download and gateway requests succeed; every held connection closed by the deadline',
  () => slowloris(['127.0.0.2'], { CELLGATE_HTTP_CONNECTIONS_PER_ADDRESS: '16' }));

kase('slowloris spread over ten loopback addresses (127.0.0.2-11), 300 connections',
  'the owner\'s reserve keeps 127.0.0.1 served; every held connection closed by the deadline',
  () => slowloris(Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 2}`), []));

kase('slowloris from the owner\'s own address (127.0.0.1, as any local user), 300 connections held',
  'a new connection takes the place of the oldest one still waiting for its request; the owner\'s requests succeed; every held connection closed by the deadline',
  () => slowloris(['127.0.0.1'], {}, { reopen: false, timeout: 10 }));

// An attacker on the owner's own address that reopens in bursts can, now and then, push a
// new connection of the owner's out before the owner's client has written its request: a
// new connection past the per-address limit takes the place of the oldest waiting one, and
// a burst of more than the limit accepted before the owner's bytes arrive reaches the
// owner's. Nothing before the headers tells the two apart; the cure is a source address of
// the owner's own (127.0.0.1 kept for the owner, other local users elsewhere) or a
// listener other users cannot reach.
kase.todo('a client whose request is slower to arrive than a burst of --http-connections-per-address connections from its own address loses that connection',
  'slowloris reopening in bursts from the owner\'s own address (127.0.0.1), 300 connections',
  'the owner\'s requests succeed (most runs)',
  () => slowloris(['127.0.0.1'], {}));
