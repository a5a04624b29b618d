// Helpers for cellgate's end-to-end tests: start the server over stdio with the official MCP SDK client.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_BIN = path.join(REPO_ROOT, 'build', 'cellgate');
export const DEFAULT_CALL_TIMEOUT_MS = 120000;
// Run as a normal user (tests/e2e/as-user.sh), the servers use the rootless backend: the
// sandbox's code runs as its user namespace's root, which is that user, not as uid 65532.
export const ROOTLESS = process.getuid() !== 0;
export const SANDBOX_UID = ROOTLESS ? 0 : 65532;

// The servers the tests start have no warm pool unless a test asks for one (--pool or
// CELLGATE_POOL): most tests count containers and run dirs, and the pool's sandboxes would
// be extra load on a shared machine. pool.test.mjs tests the pool. Set in this process's
// environment too, so that servers a test spawns itself (keep, ops, corpus_protocol, leaks)
// inherit it; a CELLGATE_POOL the test run was given wins.
// Their downloads listen on a free port, not on the default 8080 (which the first server
// would take, and a parallel test run would then share by chance): artifacts.test.mjs
// tests the default and its fall-back by clearing CELLGATE_HTTP_LISTEN for its servers.
// The kernel start timeout is 100 s (the product's default is 60): on the 2-core CI machine
// running four e2e files at once, a JavaScript start took up to 34 s with eight starting
// together, and two parallel runs saw one pass 60 s. A test of the timeout sets its own.
const TEST_ENV = { CELLGATE_POOL: '0', CELLGATE_HTTP_LISTEN: '127.0.0.1:0', CELLGATE_KERNEL_START_TIMEOUT: '100' };
process.env.CELLGATE_POOL ??= TEST_ENV.CELLGATE_POOL;
process.env.CELLGATE_HTTP_LISTEN ??= TEST_ENV.CELLGATE_HTTP_LISTEN;
process.env.CELLGATE_KERNEL_START_TIMEOUT ??= TEST_ENV.CELLGATE_KERNEL_START_TIMEOUT;

const STDERR_KEEP = 64 * 1024;

/** Returns the server binary to test: env CELLGATE_BIN, else <repo>/build/cellgate. */
// The path of the executable NAME on PATH (or in /usr/sbin, /usr/bin), or null.
export function which(name) {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin']) {
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

export function serverBinary() {
  return process.env.CELLGATE_BIN || DEFAULT_BIN;
}

/** Returns the mount points at or below dir (from /proc/self/mountinfo); empty when none. */
function mountsBelow(dir) {
  let text;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const prefix = dir.endsWith('/') ? dir : dir + '/';
  const found = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5) continue;
    const mountPoint = fields[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    if (mountPoint === dir || mountPoint.startsWith(prefix)) found.push(mountPoint);
  }
  return found;
}

/**
 * Spawns `cellgate mcp --state-dir <fresh temp dir> ...opts.args` through the SDK's
 * StdioClientTransport, connects an SDK Client and lists the tools once (so the client
 * validates every structuredContent against the tool's outputSchema).
 * opts: { args?: string[], env?: object (added to this process's env), name?: string,
 *         connectTimeoutMs?: number, asUser?: a user to run it as (setpriv; from root),
 *         capabilities?: the client's, onClient?: (client) => {} before it connects,
 *         stateDir?: an existing state dir to use, which close() then leaves in place }.
 * Returns { client, stateDir, transport, tools, stderrText(), close() }.
 * Throws with the binary path and the server's stderr when the binary is missing or the
 * server does not complete the MCP handshake.
 */
export async function startServer(opts = {}) {
  const bin = serverBinary();
  try {
    fs.accessSync(bin, fs.constants.X_OK);
    if (!fs.statSync(bin).isFile()) throw new Error('not a regular file');
  } catch (err) {
    throw new Error(
      `cellgate binary not usable at ${bin} (${err.code || err.message}); ` +
        'build it first (build/cellgate) or set CELLGATE_BIN to its path',
    );
  }

  const stateDir = opts.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-'));
  let stderrBuf = '';
  const stderrText = () => stderrBuf;

  // opts.asUser: run it as that (normal) user, from root (the rootless backend's benchmark).
  if (opts.asUser) {
    const uid = Number(execFileSync('id', ['-u', opts.asUser]).toString());
    fs.chownSync(stateDir, uid, uid);
  }
  const argv = ['mcp', '--state-dir', stateDir, ...(opts.args ?? [])];
  const transport = new StdioClientTransport({
    command: opts.asUser ? 'setpriv' : bin,
    args: opts.asUser ? ['--reuid', opts.asUser, '--regid', opts.asUser, '--init-groups', bin, ...argv] : argv,
    env: { ...TEST_ENV, ...process.env, ...(opts.env ?? {}) },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => {
    stderrBuf += chunk.toString('utf8');
    if (stderrBuf.length > STDERR_KEEP) stderrBuf = stderrBuf.slice(-STDERR_KEEP);
  });

  const client = new Client({ name: opts.name ?? 'cellgate-e2e', version: '0.0.0' }, { capabilities: opts.capabilities ?? {} });
  opts.onClient?.(client);

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    // The server's stdin ends and it is given the time it takes to finish: its calls in
    // flight get --eof-grace (10 s), then every sandbox is torn down. The SDK's close alone
    // sends SIGTERM after 2 s and SIGKILL 2 s later, which on a loaded machine can land in
    // a teardown (between a container's delete and its unmount) and leave mounts behind.
    const proc = transport._process;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      let timer;
      const exited = new Promise((r) => proc.once('close', r));
      try { proc.stdin?.end(); } catch { /* gone */ }
      await Promise.race([exited, new Promise((r) => { timer = setTimeout(r, 30000); })]);
      clearTimeout(timer);
    }
    try {
      await client.close(); // SIGTERM/SIGKILL after grace periods, if it is still there
    } catch {
      // already closed
    }
    if (opts.stateDir) return;
    const mounts = mountsBelow(stateDir);
    if (mounts.length > 0) {
      // Never recurse into a mount the server left behind; leave the dir for inspection.
      process.stderr.write(`cellgate e2e: state dir ${stateDir} still has mounts, not removed: ${mounts.join(', ')}\n`);
      return;
    }
    fs.rmSync(stateDir, { recursive: true, force: true });
  };

  let tools;
  try {
    await client.connect(transport, { timeout: opts.connectTimeoutMs ?? 30000 });
    tools = (await client.listTools()).tools;
    // A server that ends while the test still talks to it says how it ended (exit code or
    // signal) and what it last logged, so a run that fails on "Connection closed" is
    // diagnosable from the test's own output.
    const sdkOnClose = transport.onclose;
    const proc = transport._process; // the SDK forgets it before it calls onclose
    transport.onclose = () => {
      if (!closed) {
        process.stderr.write(
          `cellgate e2e: the server (pid ${transport.pid}) ended while the test still used it: ` +
            `exit code ${proc?.exitCode ?? '?'}, signal ${proc?.signalCode ?? 'none'}\n` +
            `--- server stderr (tail) ---\n${stderrBuf.slice(-6000)}\n`,
        );
      }
      sdkOnClose?.();
    };
  } catch (err) {
    const stderr = stderrText();
    await close();
    throw new Error(
      `cellgate (${bin}) did not complete the MCP handshake: ${err.message}\n--- server stderr ---\n${stderr}`,
    );
  }

  return { client, stateDir, transport, tools, stderrText, close };
}

/**
 * Calls execute_code with the given arguments and returns the CallToolResult.
 * opts: { timeoutMs? (SDK request timeout, default 120000), signal? (AbortSignal) }.
 */
export function callExec(client, args, { timeoutMs, signal } = {}) {
  const options = { timeout: timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS };
  if (signal) options.signal = signal;
  return client.callTool({ name: 'execute_code', arguments: args }, undefined, options);
}

/** Returns result.structuredContent, asserting that it is an object. */
export function sc(result) {
  assert.ok(
    result && typeof result.structuredContent === 'object' && result.structuredContent !== null,
    `result has no structuredContent: ${JSON.stringify(result)}`,
  );
  return result.structuredContent;
}

/** Formats a result (and the server's stderr tail, when given) for assertion messages. */
export function show(result, server) {
  let text = `result: ${JSON.stringify(result, null, 1)}`;
  if (text.length > 8000) text = text.slice(0, 8000) + ' ...';
  if (server) text += `\n--- server stderr (tail) ---\n${server.stderrText().slice(-4000)}`;
  return text;
}

/** Asserts the result's status (and that isError agrees with it); returns structuredContent. */
export function expectStatus(result, status, server) {
  const s = sc(result);
  if (s.status !== status) {
    // The error message in the assertion's actual value too: a report that keeps only the
    // end of a failure (CI's) still shows why.
    const actual = s.error_message ? `${s.status}: ${s.error_message}` : s.status;
    assert.equal(actual, status, `expected status "${status}", got "${s.status}"\n${show(result, server)}`);
  }
  assert.equal(result.isError === true, status !== 'success', `isError must be ${status !== 'success'}: ${show(result, server)}`);
  return s;
}

/** True when a result or error says the session is busy (seed 004's session_busy). */
export function isBusy(resultOrError) {
  if (resultOrError instanceof Error) return /busy/i.test(resultOrError.message);
  const s = resultOrError?.structuredContent;
  const said = s
    ? [s.error_code, s.error, s.error_message].filter((v) => typeof v === 'string').join(' ')
    : (resultOrError?.content ?? []).map((c) => c.text ?? '').join(' ');
  return /busy/i.test(said);
}

/**
 * Calls execute_code, retrying while the session answers session_busy (at most `tries`
 * times, `delayMs` apart). For use after a cancelled call, whose teardown is asynchronous.
 */
export async function callExecWhenIdle(client, args, { tries = 60, delayMs = 500, timeoutMs } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    try {
      last = await callExec(client, args, { timeoutMs });
      if (!isBusy(last)) return last;
    } catch (err) {
      if (!isBusy(err)) throw err;
      last = err;
    }
    await new Promise((r) => setTimeout(r, delayMs));
  }
  throw new Error(`session still busy after ${tries} tries: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `cellgate mcp --http 127.0.0.1:0 --state-dir <fresh temp dir> ...opts.args`
 * (MCP over Streamable HTTP) and waits for its port.
 * opts: { args?: string[], env?: object }.
 * Returns { url (the /mcp endpoint), origin, port, stateDir, proc (the server's process), stderrText(),
 *           connect(requestInit?, { capabilities?, onClient? }?) -> { client, transport },
 *           close() }.
 */
export async function startHttpServer(opts = {}) {
  const { spawn } = await import('node:child_process');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const bin = serverBinary();
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-http-'));
  const proc = spawn(bin, ['mcp', '--state-dir', stateDir, '--http', '127.0.0.1:0', ...(opts.args ?? [])], {
    env: { ...TEST_ENV, ...process.env, ...(opts.env ?? {}) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderrBuf = '';
  proc.stderr.on('data', (chunk) => {
    stderrBuf += chunk.toString('utf8');
    if (stderrBuf.length > STDERR_KEEP) stderrBuf = stderrBuf.slice(-STDERR_KEEP);
  });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  let port;
  for (let i = 0; i < 200 && !port; i++) {
    const m = stderrBuf.match(/listening on http:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) port = Number(m[1]);
    else await new Promise((r) => setTimeout(r, 50));
    if (proc.exitCode !== null) break;
  }
  if (!port) {
    proc.kill('SIGKILL');
    await exited;
    if (mountsBelow(stateDir).length === 0) fs.rmSync(stateDir, { recursive: true, force: true });
    throw new Error(`cellgate --http did not start:\n${stderrBuf}`);
  }
  const origin = `http://127.0.0.1:${port}`;
  const url = `${origin}/mcp`;
  const clients = [];
  const connect = async (requestInit, { capabilities = {}, onClient } = {}) => {
    const client = new Client({ name: 'cellgate-e2e-http', version: '0.0.0' }, { capabilities });
    onClient?.(client);
    const transport = new StreamableHTTPClientTransport(new URL(url), requestInit ? { requestInit } : undefined);
    await client.connect(transport, { timeout: 30000 });
    clients.push(client);
    return { client, transport };
  };
  const close = async () => {
    for (const c of clients) await c.close().catch(() => {});
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
    if (mountsBelow(stateDir).length === 0) fs.rmSync(stateDir, { recursive: true, force: true });
  };
  return { url, origin, port, stateDir, proc, stderrText: () => stderrBuf, connect, close };
}

/**
 * Spawns `cellgate mcp --state-dir STATE ...opts.args` speaking raw JSON-RPC over stdio, for
 * tests of what the SDK client would never send or of the process itself. opts: { args?,
 * env? (added to this process's env), prefix? (a command and its arguments to run it under) }.
 * Returns { proc, stderr() (its last 8000 characters), send(line or message object), next()
 * (the next message it writes) }.
 */
export function startRawServer(state, { args = [], env = {}, prefix = [] } = {}) {
  const argv = [...prefix, serverBinary(), 'mcp', '--state-dir', state, ...args];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { ...TEST_ENV, ...process.env, ...env } });
  let stderr = '';
  proc.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-8000); });
  const lines = readline.createInterface({ input: proc.stdout });
  const queue = [];
  const waiters = [];
  lines.on('line', (line) => {
    const message = JSON.parse(line);
    if (waiters.length) waiters.shift()(message); else queue.push(message);
  });
  return {
    proc,
    stderr: () => stderr,
    send: (message) => proc.stdin.write((typeof message === 'string' ? message : JSON.stringify(message)) + '\n'),
    next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve))),
  };
}
