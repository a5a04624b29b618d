// Hostile corpus, the gateway's WebSockets (issue 23, point 1): front ends attached to the
// agent's kernel that go away while a cell runs — a TCP reset, the connection ended without a
// close frame, a close frame followed at once by the socket's close — more times than the
// gateway has WebSocket slots (64), a front end that pings without reading, and one that
// stops reading during a 200 MB print. Afterwards a new upgrade works, the agent's session is
// not session_busy, the server's fds are back to where they were, it uses no CPU while idle,
// and an agent's 200 MB print does not pile up in the server for the connections that went
// away.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { callExec, sc, sleep, startHttpServer } from './lib.mjs';
import { caseTable, pidsWithCmdline, serverMemory } from './corpus.mjs';
import { gatewayRest, openChannels } from './gateway_ws_raw.mjs';

const table = caseTable('corpus_gateway_ws');
const TOKEN = crypto.randomBytes(16).toString('hex');
const SESSION = 'sess_gwattack001';
const SLOTS = 64; // the gateway's WebSockets at once
const ROUNDS = SLOTS + 16; // 68 of them go away without a closing handshake
const GROWTH_BOUND_MB = 64; // the server's RSS growth allowed during the agent's 200 MB print
const FD_SLACK = 3;
const IDLE_SLEEP_MS = 3000;
const IDLE_TICKS_MAX = 30; // CPU ticks (utime+stime, 1/100 s) allowed over IDLE_SLEEP_MS idle
// A cell that prints a line, waits a little and prints 50 KB more: a front end goes away
// between the two, while the cell runs.
const PRINTING_CELL = 'import time\nprint("started", flush=True)\ntime.sleep(0.3)\nprint("z" * 50000, flush=True)';
// The agent's print: 200 MB in 1 MB writes.
const AGENT_PRINT = 'import sys\nchunk = "a" * (1 << 20) + "\\n"\nfor i in range(200):\n    sys.stdout.write(chunk)\nsys.stdout.flush()\nprint("printed")';

let server;
let client;
let pid;
let kernelId;
let baseFds;

const fdCount = () => fs.readdirSync(`/proc/${pid}/fd`).length;
const cpuTicks = () => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
};
const rest = (method, urlPath, body) => gatewayRest(server.port, TOKEN, method, urlPath, body);
const tail = () => `\n--- server stderr (tail) ---\n${server.stderrText().slice(-3000)}`;
// A result in brief (a 200 MB print's text would drown the report).
const show = (r) => JSON.stringify({ ...sc(r), stdout: (sc(r).stdout ?? '').slice(-200), outputs: undefined }).slice(0, 1500);
const model = async () => (await rest('GET', `/api/kernels/${kernelId}`)).body;

before(async () => {
  server = await startHttpServer({ args: ['--gateway-token', TOKEN, '--max-timeout', '600'] });
  ({ client } = await server.connect());
  [pid] = pidsWithCmdline(server.stateDir, 'mcp');
  assert.ok(pid > 0, 'the server process');
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: 'x = 41' });
  assert.equal(sc(r).status, 'success', show(r));
  kernelId = sc(r).kernel_id;
  assert.ok(kernelId, JSON.stringify(sc(r)));
  // One well-behaved front end first, so that whatever the first attachment allocates once
  // is in the baseline.
  const ws = await openChannels(server.port, TOKEN, kernelId);
  const id = ws.execute('print(x)');
  await ws.waitFor((m) => m.parent_header?.msg_id === id && m.msg_type === 'execute_reply');
  ws.sendClose();
  await ws.closed;
  for (let i = 0; i < 50 && (await model()).connections !== 0; i++) await sleep(100);
  baseFds = fdCount();
});

after(async () => {
  await server?.close();
});

/**
 * One front end that attaches, runs PRINTING_CELL and goes away once its first output came:
 * 'reset' (a TCP reset), 'end' (the TCP connection ended without a close frame, as a killed
 * browser tab's), 'close' (a close frame, then the socket closed at once) or 'handshake' (a
 * close frame, reading everything until the server's close frame, then the end of the
 * connection). Resolves '' or the upgrade's refusal.
 */
async function attack(mode) {
  let ws;
  try {
    ws = await openChannels(server.port, TOKEN, kernelId);
  } catch (err) {
    return err.message;
  }
  const id = ws.execute(PRINTING_CELL);
  await ws.waitFor((m) => m.parent_header?.msg_id === id && m.msg_type === 'stream', 120000);
  if (mode === 'reset') ws.reset();
  else if (mode === 'end') ws.end();
  else {
    ws.sendClose(1000);
    if (mode === 'close') ws.sock.destroy();
    else {
      const timer = setTimeout(() => ws.sock.destroy(), 10000);
      while (!ws.closeFrame && !ws.sock.destroyed) await sleep(20);
      clearTimeout(timer);
      ws.end();
    }
  }
  // A server that never frees the connection never ends it either: bounded, then dropped.
  await Promise.race([ws.closed, sleep(3000)]);
  ws.sock.destroy();
  return '';
}

/** Waits (bounded by count) until the kernel's model lists no connection. */
async function settle() {
  let m;
  for (let i = 0; i < 100; i++) {
    m = await model();
    if (m.connections === 0) return m;
    await sleep(100);
  }
  return m;
}

table('4 front ends reset, then the agent prints 200 MB', `server RSS grows < ${GROWTH_BOUND_MB} MB`, async () => {
  const fronts = [];
  for (let i = 0; i < 4; i++) fronts.push(await openChannels(server.port, TOKEN, kernelId));
  for (let i = 0; i < 50 && (await model()).connections !== 4; i++) await sleep(100);
  for (const ws of fronts) ws.reset();
  const left = await settle();
  const start = serverMemory(pid);
  try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); } catch { /* not root: VmHWM is cumulative */ }
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: AGENT_PRINT, timeout: 300 }, { timeoutMs: 400000 });
  const mem = serverMemory(pid);
  const said = `start RSS ${start.rssMb.toFixed(0)} MB, VmHWM ${mem.hwmMb.toFixed(0)} MB, RSS after ${mem.rssMb.toFixed(0)} MB; connections left before the print ${left.connections}`;
  assert.equal(sc(r).status, 'success', show(r));
  assert.ok(mem.hwmMb - start.rssMb < GROWTH_BOUND_MB, said);
  return said;
});

table(`${ROUNDS} front ends go away mid-output (reset, end, close frame then close, closing handshake)`, 'each upgrade answered 101', async () => {
  const refused = [];
  for (let i = 0; i < ROUNDS; i++) {
    const why = await attack(i % 7 === 0 ? (i % 2 ? 'close' : 'handshake') : i % 2 ? 'end' : 'reset');
    if (why) refused.push(`#${i} ${why}`);
  }
  assert.deepEqual(refused.slice(0, 3), [], `${refused.length} of ${ROUNDS} refused${tail()}`);
  return `${ROUNDS} attached and went away`;
});

table("the agent's session is not session_busy after the attack", 'execute_code runs', async () => {
  const m = await settle();
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: 'print(x + 1)' });
  assert.equal(sc(r).status, 'success', `${show(r)} (kernel model ${JSON.stringify(m)})`);
  assert.equal(sc(r).stdout, '42\n');
  return `stdout 42; kernel ${m.execution_state}, ${m.connections} connections`;
});

table('a new front end attaches and runs a cell after the attack', "101, the agent's x", async () => {
  const m = await settle();
  const ws = await openChannels(server.port, TOKEN, kernelId);
  const id = ws.execute('print(x)');
  const out = await ws.waitFor((msg) => msg.parent_header?.msg_id === id && msg.msg_type === 'stream');
  ws.sendClose();
  await ws.closed;
  assert.equal(out.content.text, '41\n');
  return `x=41; kernel model after settling ${JSON.stringify(m)}`;
});

table("the server's fds come back to the baseline", `<= baseline + ${FD_SLACK}`, async () => {
  let fds = fdCount();
  for (let i = 0; i < 100 && fds > baseFds + FD_SLACK; i++) {
    await sleep(100);
    fds = fdCount();
  }
  assert.ok(fds <= baseFds + FD_SLACK, `${fds} fds, baseline ${baseFds}`);
  return `${fds} fds (baseline ${baseFds})`;
});

table('the server uses no CPU while idle after the attack', `<= ${IDLE_TICKS_MAX} ticks in ${IDLE_SLEEP_MS} ms`, async () => {
  await settle();
  const before = cpuTicks();
  await sleep(IDLE_SLEEP_MS);
  const used = cpuTicks() - before;
  assert.ok(used <= IDLE_TICKS_MAX, `${used} ticks of CPU over ${IDLE_SLEEP_MS} ms idle`);
  return `${used} ticks`;
});

table('a front end that sends 600,000 pings and never reads', 'closed and freed, RSS bounded', async () => {
  const m = await settle();
  assert.equal(m.connections, 0, `connections left over before this case: ${JSON.stringify(m)}`);
  const ws = await openChannels(server.port, TOKEN, kernelId);
  ws.sock.pause();
  const start = serverMemory(pid);
  try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); } catch { /* cumulative */ }
  await Promise.race([ws.pings(600000), sleep(60000)]);
  const after = await settle();
  const mem = serverMemory(pid);
  ws.sock.destroy();
  const said = `connections ${after.connections}; start RSS ${start.rssMb.toFixed(0)} MB, VmHWM ${mem.hwmMb.toFixed(0)} MB, RSS after ${mem.rssMb.toFixed(0)} MB`;
  assert.equal(after.connections, 0, said);
  assert.ok(mem.hwmMb - start.rssMb < GROWTH_BOUND_MB, said);
  return said;
});

table('a front end that stops reading while the agent prints 200 MB is closed and freed', 'connections back to 0, RSS bounded', async () => {
  const m = await settle();
  // Precondition: no connection left over (else each would pile up the 200 MB print).
  assert.equal(m.connections, 0, `connections left over before this case: ${JSON.stringify(m)}`);
  const ws = await openChannels(server.port, TOKEN, kernelId);
  const id = ws.execute('print("attached")');
  await ws.waitFor((msg) => msg.parent_header?.msg_id === id && msg.msg_type === 'status' && msg.content.execution_state === 'idle');
  ws.sock.pause();
  const start = serverMemory(pid);
  try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); } catch { /* cumulative */ }
  const r = await callExec(client, { language: 'python', session_id: SESSION, code: AGENT_PRINT, timeout: 300 }, { timeoutMs: 400000 });
  assert.equal(sc(r).status, 'success', show(r));
  const after = await settle();
  const mem = serverMemory(pid);
  ws.sock.destroy();
  const said = `connections ${after.connections}; start RSS ${start.rssMb.toFixed(0)} MB, VmHWM ${mem.hwmMb.toFixed(0)} MB, RSS after ${mem.rssMb.toFixed(0)} MB`;
  assert.equal(after.connections, 0, said);
  // The queue is capped at 64 MB (then the connection is closed), plus socket buffers.
  assert.ok(mem.hwmMb - start.rssMb < 64 + GROWTH_BOUND_MB, said);
  return said;
});
