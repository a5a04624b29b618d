// The soak's faults, each recorded in the ledger ({type, server, t0, t1, injected}) so that
// calls near one may fail (but must be answered or have a reason).

import net from 'node:net';
import path from 'node:path';

import { readText, listDir } from '../e2e/leftovers.mjs';
import { sleep } from '../e2e/lib.mjs';
import { checkExeclog } from './invariants.mjs';
import { closeSession, modernPost, runCall } from './lanes.mjs';
import { newToken } from './work.mjs';

export const FAULTS = ['kill_kernel', 'kill_init', 'kill_runc', 'oom', 'fill_workspace', 'client_disconnect',
  'stop_reading', 'server_kill_restart', 'listener_flood'];

/** The pids of processes in one of the cgroups of the instances below STATE, with their command lines. */
function sandboxProcesses(state) {
  const prefixes = listDir(path.join(state, 'instances')).map((i) => `/cellgate/cg-${i}-`);
  const found = [];
  for (const pid of listDir('/proc').filter((p) => /^\d+$/.test(p))) {
    const cgroup = readText(`/proc/${pid}/cgroup`) ?? '';
    if (!prefixes.some((p) => cgroup.includes(p))) continue;
    found.push({ pid: Number(pid), cmd: (readText(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ').trim() });
  }
  return found;
}

function kill(pid) {
  try { process.kill(pid, 'SIGKILL'); return true; } catch { return false; }
}

/** SIGKILLs the stdio server and waits for its end; its calls in flight are severed. */
async function killStdio(ctx) {
  const server = ctx.s1;
  server.killing = true;
  server.killedAt = Date.now();
  ctx.ledger.kills.push({ server: 'stdio', at: Date.now() });
  process.kill(server.pid, 'SIGKILL');
  await server.close();
}

const stateOf = (ctx, server) => (server.kind === 'stdio' ? ctx.stdioState : server.stateDir);

/** Runs fault TYPE once; records it. */
export async function runFault(ctx, type, phase) {
  const server = ['server_kill_restart', 'fill_workspace'].includes(type) ? ctx.s1 : ctx.s2;
  const fault = { type, server: server.kind, t0: Date.now(), t1: null, injected: false, phase };
  ctx.ledger.faults.push(fault);
  process.stderr.write(`soak: phase ${phase}: fault ${type}\n`);
  try {
    fault.injected = await FAULT_FNS[type](ctx, server, phase);
  } catch (err) {
    ctx.ledger.fail('fault', `${type}: ${err.stack}`);
  }
  fault.t1 = Date.now();
  if (!fault.injected) ctx.ledger.fail('fault', `${type}: could not be injected`);
}

// A one-call session for a fault: runs CODE in LANG on the HTTP server and answers the result.
const oneCall = (ctx, session, lang, code, extra = {}) => runCall(ctx, { front: 'modern', session, lang, kind: 'fault', expect: 'any',
  token: newToken(), args: { language: lang, code, ...extra } });

const FAULT_FNS = {
  // kill -9 of a kernel (any process of a sandbox but its init) and of the sandbox's init.
  async kill_kernel(ctx, server) {
    await oneCall(ctx, 'soak-fault-kernel', 'python', 'x = 1');
    const procs = sandboxProcesses(stateOf(ctx, server)).filter((p) => /ipykernel|kernel/.test(p.cmd) && !/catatonit|runc/.test(p.cmd));
    const hit = procs.length > 0 && kill(ctx.rng.pick(procs).pid);
    const after = await oneCall(ctx, 'soak-fault-kernel', 'python', 'print(6 * 7)');
    if (after && !/42/.test(after.structuredContent?.stdout ?? '')) ctx.ledger.fail('recover', `after a killed kernel: ${JSON.stringify(after.structuredContent).slice(0, 800)}`);
    await closeSession(ctx, 'modern', null, 'soak-fault-kernel');
    return hit;
  },
  async kill_init(ctx, server) {
    await oneCall(ctx, 'soak-fault-init', 'bash', 'echo up');
    const procs = sandboxProcesses(stateOf(ctx, server)).filter((p) => /catatonit/.test(p.cmd));
    const hit = procs.length > 0 && kill(ctx.rng.pick(procs).pid);
    await oneCall(ctx, 'soak-fault-init', 'bash', 'echo again'); // an answer, whatever it says
    const after = await oneCall(ctx, 'soak-fault-init-next', 'python', 'print(6 * 7)');
    if (after && !/42/.test(after.structuredContent?.stdout ?? '')) ctx.ledger.fail('recover', `after a killed init: ${JSON.stringify(after.structuredContent).slice(0, 800)}`);
    await closeSession(ctx, 'modern', null, 'soak-fault-init');
    await closeSession(ctx, 'modern', null, 'soak-fault-init-next');
    return hit;
  },
  // kill -9 of the runtime's processes: runc while a one-shot's sandbox is made.
  async kill_runc(ctx, server) {
    const state = stateOf(ctx, server);
    let hit = false;
    let done = false;
    const call = oneCall(ctx, null, 'python', 'print(1)').finally(() => { done = true; });
    while (!done && !hit) {
      for (const pid of listDir('/proc').filter((p) => /^\d+$/.test(p))) {
        const cmd = (readText(`/proc/${pid}/cmdline`) ?? '').split('\0');
        if (/(^|\/)runc$/.test(cmd[0]) && cmd.join(' ').includes(state) && kill(Number(pid))) { hit = true; break; }
      }
      await sleep(2);
    }
    await call;
    return hit;
  },
  // OOM: a cell that takes more than --memory-mb; the session runs on after it.
  async oom(ctx) {
    const r = await oneCall(ctx, 'soak-fault-oom', 'python', "x = b'a' * (400 * 1024 * 1024)\nprint(len(x))");
    const after = await oneCall(ctx, 'soak-fault-oom', 'python', 'print(6 * 7)');
    if (after && !/42/.test(after.structuredContent?.stdout ?? '')) ctx.ledger.fail('recover', `after an OOM: ${JSON.stringify(after.structuredContent).slice(0, 800)}`);
    await closeSession(ctx, 'modern', null, 'soak-fault-oom');
    return r !== null && !/^400/.test(r.structuredContent?.stdout ?? '');
  },
  // A workspace filled to its limit (stdio server): the write fails, the session goes on.
  async fill_workspace(ctx) {
    const session = 'soak-fault-fill';
    const call = (code) => runCall(ctx, { front: 'stdio', session, lang: 'bash', kind: 'fault', expect: 'any', token: newToken(), args: { language: 'bash', code } });
    await ctx.s1Ready;
    const r = await call('dd if=/dev/zero of=fill bs=1M count=200 2>&1 | grep -o "No space left on device" | head -1; df -m . | tail -1');
    const full = /No space left/.test(JSON.stringify(r?.structuredContent ?? {}));
    const after = await call('rm -f fill; echo ok > f && cat f && rm f');
    if (after && !/ok/.test(after.structuredContent?.stdout ?? '')) ctx.ledger.fail('recover', `after a full workspace: ${JSON.stringify(after.structuredContent).slice(0, 800)}`);
    await closeSession(ctx, 'stdio', null, session);
    return full;
  },
  // A client that goes away mid-call: an SDK client closed while its one-shot runs.
  async client_disconnect(ctx) {
    const { client } = await ctx.s2.connect();
    const token = newToken();
    const rec = ctx.ledger.begin({ token, front: 'http1', server: 'http', session: null, lang: 'python', kind: 'disconnect', expect: 'any' });
    const call = client.callTool({ name: 'execute_code', arguments: { language: 'python', code: `import time\nprint('${token}', flush=True)\ntime.sleep(30)` } }, undefined, { timeout: 120000 });
    await sleep(2000);
    await client.close();
    await call.then((r) => ctx.ledger.answer(rec, r), (err) => ctx.ledger.noAnswer(rec, `the client disconnected (${err.message})`, true));
    return true;
  },
  // A client that stops reading: a call whose answer is large, never read, then the connection dropped.
  async stop_reading(ctx) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code: "print('y' * 4000000)" },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'soak', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} } } });
    const sock = net.connect(ctx.s2.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.pause();
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n`
      + `Mcp-Method: tools/call\r\nMcp-Name: execute_code\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await sleep(8000);
    sock.destroy();
    return true;
  },
  // The stdio server SIGKILLed and started again on its state dir (--keep-sessions on), once
  // more precisely between an execution's log line and its index row (--test-hold-at
  // log_index: that run's answer waits for its write, so it is killed unanswered), and once
  // again: the next start's index equals the lines, and the kept session kept its state
  // across both kills.
  async server_kill_restart(ctx, server, phase) {
    const session = 'soak-fault-keep';
    const call = (code) => runCall(ctx, { front: 'stdio', session, lang: 'python', kind: 'fault', expect: 'any', token: newToken(), args: { language: 'python', code } });
    await ctx.s1Ready;
    await call('kept_value = 41');
    let ready;
    ctx.s1Ready = new Promise((r) => { ready = r; });
    try {
      await killStdio(ctx);
      const hold = path.join(ctx.stdioState, `hold-${phase}`);
      ctx.s1 = await ctx.restartStdio(['--test-hold-at', `log_index:${hold}`]);
      const unanswered = call('kept_value += 0');
      for (let i = 0; i < 400 && !ctx.s1.stderrText().includes('held at log_index'); i++) await sleep(25);
      const held = ctx.s1.stderrText().includes('held at log_index');
      if (!held) ctx.ledger.fail('fault', `the log's worker never reached log_index:\n${ctx.s1.stderrText().slice(-2000)}`);
      await killStdio(ctx);
      await unanswered;
      ctx.s1 = await ctx.restartStdio();
      const after = await call('print(kept_value + 1)');
      if (!/42/.test(after?.structuredContent?.stdout ?? '')) ctx.ledger.fail('keep', `a kept session lost its state across SIGKILL: ${JSON.stringify(after?.structuredContent ?? null).slice(0, 800)}`);
      await checkExeclog(ctx, ctx.s1, `restart after a kill at log_index (phase ${phase})`);
      return held;
    } finally {
      ready();
      await closeSession(ctx, 'stdio', null, session);
    }
  },
  // The listener flooded: 300 connections at once, half of them with a request they never finish.
  async listener_flood(ctx) {
    const socks = [];
    for (let i = 0; i < 300; i++) {
      const s = net.connect(ctx.s2.port, '127.0.0.1');
      s.on('error', () => {});
      if (i % 2) s.on('connect', () => s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{'));
      socks.push(s);
    }
    const r = await modernPost(ctx.s2.url, 'tools/call', { name: 'calculate', arguments: { expression: '6*7' } }).catch((err) => ({ err }));
    await sleep(2000);
    for (const s of socks) s.destroy();
    if (r.err) ctx.ledger.fail('flood', `no answer during the flood: ${r.err.message}`);
    return true;
  },
};
