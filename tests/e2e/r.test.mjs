// R (issue 27, point 1) through the MCP SDK client, with real IRkernel in real sandboxes: what
// the Python tests check, for language 'r' (and its alias 'R'): state, streams, errors with a
// short traceback, the last value, a ggplot inline and saved, stdin, timeout and cancel
// keeping state, the memory limit, the workspace scan, the execution log, export_notebook,
// the script library, the warm pool and seed 001's tool. Checks share a few sessions.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, callExecWhenIdle, expectStatus, sc, show, sleep, startServer } from './lib.mjs';

const PYTHON = '/usr/bin/python3'; // Debian's, with python3-nbformat
const BUDGET = 49152;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const SID = 'sess_rmain0000001'; // state, plot, stdin, timeout, log and notebook

let server;
let client;

before(async () => {
  server = await startServer({
    name: 'r',
    args: ['--http-listen', '127.0.0.1:0', '--interrupt-grace-ms', '1500', '--image-budget', String(BUDGET)],
  });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args, srv = server) => srv.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
const run = (args) => callExec(client, args);

test("start_session and send_to_session in R; 'R' is an alias; state across calls, stdout, message() and warning() on stderr", async () => {
  const started = await call('start_session', { language: 'r', name: 'r-analysis' });
  assert.equal(started.isError, false, show(started, server));
  const sid = sc(started).session_id;
  assert.equal(sc(started).language, 'r');
  let r = await call('send_to_session', { session_id: sid, code: 'x <- 41\ndf <- data.frame(a = 1:2, b = c("u", "v"))' });
  assert.equal(sc(r).status, 'success', show(r, server));
  r = await call('send_to_session', { session_id: sid, code: 'cat("out", x + 1, "\\n"); message("note"); warning("careful")' });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'out 42 \n');
  assert.match(s.stderr, /^note\n/);
  assert.match(s.stderr, /careful/);
  // The alias, same session: state is kept.
  const d = expectStatus(await run({ language: 'R', session_id: sid, code: 'print(nrow(df))' }), 'success', server);
  assert.equal(d.stdout, '[1] 2\n');
  const listed = sc(await call('list_sessions', {})).sessions.find((x) => x.session_id === sid);
  assert.equal(listed.language, 'r');
  assert.equal(listed.executions_count, 3);
  assert.equal(sc(await call('close_session', { session_id: sid })).status, 'closed');
});

// Another client on the same kernel (as a Jupyter console would connect to its ipc
// sockets: the key and sockets read from the session's ipc dir on the host) runs a cell that
// sleeps, then fails. A call made meanwhile queues behind it, and IRkernel aborts every
// request queued behind an error (status "aborted", never run): cellgate sends it again.
const OTHER_CLIENT = String.raw`
import hashlib, hmac, json, sys, uuid, datetime, zmq
info = json.load(open(sys.argv[1] + '/kernel-r.json'))
key = info['key'].encode()
ctx = zmq.Context()
shell = ctx.socket(zmq.DEALER); shell.connect('ipc://' + sys.argv[1] + '/r-1')
iopub = ctx.socket(zmq.SUB); iopub.setsockopt(zmq.SUBSCRIBE, b''); iopub.connect('ipc://' + sys.argv[1] + '/r-2')
def send(code):
    header = {'msg_id': uuid.uuid4().hex, 'session': uuid.uuid4().hex, 'username': 'other', 'msg_type': 'execute_request',
              'version': '5.3', 'date': datetime.datetime.now(datetime.timezone.utc).isoformat()}
    parts = [json.dumps(x).encode() for x in (header, {}, {}, {'code': code, 'silent': False, 'store_history': True,
             'user_expressions': {}, 'allow_stdin': False, 'stop_on_error': True})]
    shell.send_multipart([b'<IDS|MSG>', hmac.new(key, b''.join(parts), hashlib.sha256).hexdigest().encode()] + parts)
    return header['msg_id']
import time; time.sleep(0.5)  # the subscription is live
mid = send('Sys.sleep(4); stop("the other client fails")')
while True:
    frames = iopub.recv_multipart()
    i = frames.index(b'<IDS|MSG>')
    parent, content = json.loads(frames[i + 3]), json.loads(frames[i + 5])
    if parent.get('msg_id') == mid and content.get('execution_state') == 'busy':
        print('busy', flush=True); break
frames = shell.recv_multipart()
print('reply', json.loads(frames[frames.index(b'<IDS|MSG>') + 5])['status'], flush=True)
`;

test('a call queued behind another client\'s failing cell, which IRkernel aborts without running it, is sent again and runs', async () => {
  const sid = sc(await call('start_session', { language: 'r' })).session_id;
  expectStatus(await run({ language: 'r', session_id: sid, code: 'y <- 1' }), 'success', server);
  const pid = sc(await call('list_sessions', {})).sessions.find((x) => x.session_id === sid).pid;
  const instances = path.join(server.stateDir, 'instances');
  const dirs = fs.readdirSync(instances).flatMap((i) => fs.readdirSync(path.join(instances, i, 'sessions')).map((d) => path.join(instances, i, 'sessions', d)));
  const dir = dirs.find((d) => fs.existsSync(path.join(d, 'bundle', 'kernel-r.pid')) && Number(fs.readFileSync(path.join(d, 'bundle', 'kernel-r.pid'), 'utf8')) === pid);
  assert.ok(dir, `the session's directory (kernel pid ${pid})`);
  const other = spawn(PYTHON, ['-c', OTHER_CLIENT, path.join(dir, 'ipc')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => other.on('exit', resolve));
  let out = '';
  other.stdout.on('data', (d) => { out += d; });
  other.stderr.on('data', (d) => { out += d; });
  for (let i = 0; i < 300 && !out.includes('busy'); i++) await sleep(100);
  assert.match(out, /busy/, `the other client's cell runs: ${out}`);
  const r = expectStatus(await run({ language: 'r', session_id: sid, code: 'cat("after the other client", y, "\\n")' }), 'success', server);
  assert.equal(r.stdout, 'after the other client 1 \n');
  await exited;
  assert.match(out, /reply error/, out);
  assert.match(server.stderrText(), /aborted a request it had not started/);
  await call('close_session', { session_id: sid });
});

test('the last value is the returnValue, as JSON the way Python and JavaScript give it', async () => {
  const sid = 'sess_rvalue000001';
  const n = expectStatus(await run({ language: 'r', session_id: sid, code: 'x <- 41\nx + 1' }), 'success', server);
  assert.equal(n.stdout, '');
  assert.equal(n.outputs[0].type, 'execute_result');
  assert.equal(n.outputs[0].data['text/plain'], '[1] 42');
  assert.equal(n.returnValue, 42, show(n, server));
  const d = expectStatus(await run({ language: 'r', session_id: sid, code: 'data.frame(a = 1:2, b = c("u", "v"))' }), 'success', server);
  assert.deepEqual(d.returnValue, [{ a: 1, b: 'u' }, { a: 2, b: 'v' }], show(d, server));
  const l = expectStatus(await run({ language: 'r', session_id: sid, code: 'list(name = "x", values = c(1.5, NA))' }), 'success', server);
  assert.deepEqual(l.returnValue, { name: 'x', values: [1.5, null] }, show(l, server));
  await call('close_session', { session_id: sid });
});

// The server pings a kernel's heartbeat every second while a cell runs; IRkernel's heartbeat
// is a REP socket, which takes a ping only with the empty delimiter frame REQ sends.
test('a cell that runs past a heartbeat ping, then the next cell runs at once', async () => {
  const sid = 'sess_rheartbeat01';
  const slow = expectStatus(await run({ language: 'r', session_id: sid, code: 'Sys.sleep(2.5)\ncat("slept\\n")' }), 'success', server);
  assert.equal(slow.stdout, 'slept\n');
  for (const n of [1, 2]) {
    const next = expectStatus(await run({ language: 'r', session_id: sid, code: `cat(${n}, "\\n")`, timeout: 20 }), 'success', server);
    assert.equal(next.stdout, `${n} \n`);
  }
  await call('close_session', { session_id: sid });
});

test('an error: execution_error with the R message and a short traceback of the cell\'s own calls', async () => {
  const r = await run({ language: 'r', session_id: SID, code: 'f <- function() stop("boom")\ng <- function() f()\ng()' });
  const s = expectStatus(r, 'execution_error', server);
  assert.equal(s.error_code, 'RUNTIME_ERROR');
  assert.equal(s.error_message, 'Error in f(): boom');
  assert.match(s.stderr, /^Error in f\(\): boom\nTraceback:\n1\. g\(\)\n2\. f\(\)/, show(r, server));
  const lines = s.stderr.trim().split('\n');
  assert.ok(lines.length <= 6, `a short traceback: ${s.stderr}`);
  assert.doesNotMatch(s.stderr, /evaluate|IRkernel|withCallingHandlers|tryCatch|eval\(expr/, 'no machinery frames');
});

test('a ggplot: an inline PNG within the image budget; ggsave and write.csv files among the artifacts', async () => {
  const code = [
    'library(ggplot2)',
    'p <- ggplot(data.frame(a = 1:10, b = (1:10)^2), aes(a, b)) + geom_point()',
    'print(p)',
    'ggsave("/mnt/data/p.png", p, width = 4, height = 3, dpi = 72)',
    'write.csv(data.frame(a = 1:3), "/mnt/data/t.csv", row.names = FALSE)',
  ].join('\n');
  const r = await run({ language: 'r', session_id: SID, code, timeout: 120 });
  const s = expectStatus(r, 'success', server);
  const images = r.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 1, show(r, server));
  assert.equal(images[0].mimeType, 'image/png');
  const png = Buffer.from(images[0].data, 'base64');
  assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
  assert.ok(png.length <= BUDGET, `${png.length} bytes inline`);
  const display = s.outputs.find((o) => o.type === 'display_data' && o.mime_type === 'image/png');
  assert.ok(display, JSON.stringify(s.outputs));
  assert.equal(r.content[display.content_index], images[0]);
  // The workspace scan: both files, each with a download URL that serves it.
  assert.deepEqual([...s.artifacts_created].sort(), ['p.png', 't.csv']);
  const saved = s.artifacts.find((a) => a.path === '/mnt/data/p.png');
  assert.ok(saved, JSON.stringify(s.artifacts));
  assert.equal(saved.mime_type, 'image/png');
  const file = Buffer.from(await (await fetch(saved.download_url)).arrayBuffer());
  assert.deepEqual(file.subarray(0, 8), PNG_SIGNATURE);
  assert.equal(file.length, saved.size_bytes);
  const csv = s.artifacts.find((a) => a.path === '/mnt/data/t.csv');
  assert.equal(await (await fetch(csv.download_url)).text(), '"a"\n1\n2\n3\n');
});

test("readline() and readLines('stdin') read the call's stdin; without stdin a clear error", async () => {
  const code = 'n <- readline("Name: ")\ncat("Hello,", n, "\\n")\nrest <- readLines("stdin")\ncat(length(rest), rest, sep = "|")';
  const s = expectStatus(await run({ language: 'r', session_id: SID, code, stdin: 'Alice\nb\nc\n' }), 'success', server);
  assert.equal(s.stdout, 'Name: Hello, Alice \n2|b|c');
  const one = expectStatus(await run({ language: 'r', session_id: SID, code: 'cat(rev(readLines("stdin")), sep = ",")', stdin: 'x\ny' }), 'success', server);
  assert.equal(one.stdout, 'y,x');
  for (const [code, what] of [['readline("Name: ")', 'readline()'], ['readLines("stdin")', "readLines('stdin')"]]) {
    const e = expectStatus(await run({ language: 'r', session_id: SID, code }), 'execution_error', server);
    assert.ok(e.error_message.includes(`${what} needs stdin: pass \`stdin\` with the call`), e.error_message);
  }
});

test('a timeout interrupts Sys.sleep(30) and keeps the session\'s state', async () => {
  expectStatus(await run({ language: 'r', session_id: SID, code: 'kept <- "before the timeout"' }), 'success', server);
  const r = await run({ language: 'r', session_id: SID, code: 'cat("started\\n")\nSys.sleep(30)', timeout: 2 });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
  assert.equal(s.kernel_restarted, false, show(r, server));
  assert.equal(s.stdout, 'started\n');
  for (const n of [1, 2]) {
    const a = expectStatus(await run({ language: 'r', session_id: SID, code: `cat(kept, ${n}, "\\n")`, timeout: 20 }), 'success', server);
    assert.equal(a.stdout, `before the timeout ${n} \n`);
  }
});

test('cancel (notifications/cancelled) interrupts an R cell and keeps the session\'s state', async () => {
  const sid = 'sess_rcancel00001';
  expectStatus(await run({ language: 'r', session_id: sid, code: 'y <- 5' }), 'success', server);
  const controller = new AbortController();
  const pending = callExec(client, { language: 'r', session_id: sid, code: 'Sys.sleep(30)\ny <- 6' }, { signal: controller.signal });
  await sleep(1500);
  controller.abort(new Error('e2e cancel'));
  assert.ok(await pending.then(() => null, (e) => e), 'the cancelled call gets no response');
  const a = expectStatus(await callExecWhenIdle(client, { language: 'r', session_id: sid, code: 'cat(y, "\\n")', timeout: 20 }), 'success', server);
  assert.equal(a.stdout, '5 \n', 'the cell stopped before y <- 6; y kept');
  await call('close_session', { session_id: sid });
});

test('the memory limit: allocating 1 GB under --memory-mb 256 is a clear error; the session goes on', async () => {
  const small = await startServer({ name: 'r-memory', args: ['--http-listen', 'off', '--memory-mb', '256'] });
  try {
    const sid = 'sess_rmemory00001';
    const r = await callExec(small.client, { language: 'r', session_id: sid, code: 'big <- numeric(1.25e8)\ncat("ALLOCATED\\n")', timeout: 60 });
    const s = expectStatus(r, 'execution_error', small);
    assert.ok(!s.stdout.includes('ALLOCATED'), show(r, small));
    assert.match(`${s.stderr}\n${s.error_message}`, /out of memory|cannot allocate/i, show(r, small));
    const again = expectStatus(await callExec(small.client, { language: 'r', session_id: sid, code: 'cat("alive\\n")' }), 'success', small);
    assert.equal(again.stdout, 'alive\n');
  } finally {
    await small.close();
  }
});

test('the execution log finds the R runs with language r', async () => {
  expectStatus(await run({ language: 'r', session_id: SID, code: 'cat("r-log-marker\\n")' }), 'success', server);
  const found = sc(await call('search_execution_logs', { query: 'r-log-marker' }));
  assert.equal(found.total_count, 1, JSON.stringify(found));
  assert.equal(found.results[0].language, 'r');
  assert.equal(found.results[0].session_id, SID);
  const byLanguage = sc(await call('search_execution_logs', { language: 'r', limit: 100 }));
  assert.ok(byLanguage.total_count >= 8, JSON.stringify(byLanguage).slice(0, 500));
  assert.ok(byLanguage.results.every((x) => x.language === 'r'));
  assert.equal(sc(await call('search_execution_logs', { language: 'R', limit: 100 })).total_count, byLanguage.total_count, 'the alias');
  const entry = sc(await call('get_execution_log', { execution_id: found.results[0].execution_id }));
  assert.equal(entry.stdout, 'r-log-marker\n');
});

test("export_notebook of an R session validates with nbformat, kernelspec 'ir', language_info 'R'", async () => {
  const r = await call('export_notebook', { session_id: SID, filename: 'r-session.ipynb' });
  assert.equal(r.isError, false, show(r, server));
  const s = sc(r);
  assert.equal(s.language, 'r');
  assert.ok(s.cells >= 5, JSON.stringify(s));
  const text = await (await fetch(s.download_url)).text();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-r-nb-'));
  try {
    const file = path.join(dir, 'r-session.ipynb');
    fs.writeFileSync(file, text);
    execFileSync(PYTHON, ['-c', 'import nbformat,sys; nbformat.validate(nbformat.read(sys.argv[1], 4))', file]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const nb = JSON.parse(text);
  assert.equal(nb.metadata.kernelspec.name, 'ir');
  assert.equal(nb.metadata.language_info.name, 'R');
  const code = nb.cells.filter((c) => c.cell_type === 'code');
  assert.ok(code.some((c) => c.source.includes('library(ggplot2)') && c.outputs.some((o) => o.data?.['image/png'])), 'the plot cell with its PNG');
  assert.ok(code.some((c) => c.outputs.some((o) => o.output_type === 'error' && /boom/.test(o.evalue))), 'the error cell');
});

test('save_script in R and run_script: commandArgs(trailingOnly = TRUE) gets the args; a missing package is refused', async () => {
  const args = ['plain', 'with space', "it's", '--flag=1', ''];
  const saved = sc(await call('save_script', { name: 'r-args', description: 'prints its args', language: 'r', code: 'a <- commandArgs(trailingOnly = TRUE)\ncat(jsonlite::toJSON(a), "\\n")' }));
  assert.equal(saved.success, true, JSON.stringify(saved));
  assert.match(saved.path, /\/r-args\/script\.R$/);
  const r = sc(await call('run_script', { name: 'r-args', args }));
  assert.equal(r.success, true, JSON.stringify(r));
  assert.equal(r.language, 'r');
  assert.deepEqual(JSON.parse(r.stdout), args);
  assert.equal(JSON.parse(sc(await call('run_script', { name: 'r-args' })).stdout).length, 0);

  await call('save_script', { name: 'r-needs', description: 'needs', language: 'r', code: 'cat("ran\\n")', packages: ['ggplot2', 'noSuchPkgCg'] });
  const m = sc(await call('run_script', { name: 'r-needs' }));
  assert.equal(m.success, false);
  assert.doesNotMatch(m.stdout, /ran/);
  assert.match(m.stderr, /missing package noSuchPkgCg/);
  assert.doesNotMatch(m.stderr, /ggplot2/);
});

test('--pool r=1: the first R cell is served from the pool', async () => {
  const pooled = await startServer({ name: 'r-pool', args: ['--http-listen', 'off', '--log-level', 'debug', '--pool', 'r=1'] });
  try {
    for (const end = Date.now() + 90000; !/pool: a r sandbox is ready/.test(pooled.stderrText()); await sleep(100))
      if (Date.now() > end) assert.fail(`no ready r sandbox\n${pooled.stderrText().slice(-3000)}`);
    const s = expectStatus(await callExec(pooled.client, { language: 'r', code: 'x <- 6 * 7\ncat(x, "\\n")' }), 'success', pooled);
    assert.equal(s.stdout, '42 \n');
    assert.equal(s.execution_count, 1, 'the warm-up is not counted');
    assert.match(pooled.stderrText(), /pool: r sandbox \w+ claimed by a one-shot run/);
  } finally {
    await pooled.close();
  }
});

test("--tool-profile seed001: the seed's tool runs R", async () => {
  const seed = await startServer({ name: 'r-seed001', args: ['--tool-profile', 'seed001', '--http-listen', 'off'] });
  try {
    const tool = seed.tools.find((t) => t.name === 'code_execution_sandbox.execute_code');
    assert.match(tool.inputSchema.properties.language.description, /\br\b/);
    const exec = (args) => seed.client.callTool({ name: 'code_execution_sandbox.execute_code', arguments: args }, undefined, { timeout: 120000 });
    let s = sc(await exec({ language: 'r', code: 'for (i in 0:2) cat(sprintf("Count: %d\\n", i))\ncat("got", readline(), "\\n")', stdin_data: 'data' }));
    assert.equal(s.status, 'completed', JSON.stringify(s));
    assert.equal(s.stdout, 'Count: 0\nCount: 1\nCount: 2\ngot data \n');
    s = sc(await exec({ language: 'R', code: 'stop("bad")' }));
    assert.equal(s.status, 'error_runtime');
    assert.equal(s.error_code, 'RUNTIME_ERROR');
    assert.match(s.stderr, /bad/);
  } finally {
    await seed.close();
  }
});
