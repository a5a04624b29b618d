// The Docker Engine API backend (--backend docker) against Podman's Docker-compatible service on a
// private socket, running the small image scripts/podman-test-image.sh builds from this host's
// packages: hello, state, stdin, a plot, a timeout with state kept, no network, host files, the
// seccomp profile, a fork bomb, files and downloads, labels, and the orphans of a kill -9.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { REPO_ROOT, callExec, expectStatus, show, sleep, startRawServer, startServer } from './lib.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

const SKIP = podmanMissing();

let podman;
let socket;
let server;
let client;

// GETs PATH from the engine on the private socket; resolves with the parsed JSON.
function engine(pathname) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: socket, path: `/v1.41${pathname}` }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => {
        try { resolve(body ? JSON.parse(body) : null); } catch (err) { reject(new Error(`${pathname}: ${body}`)); }
      });
    });
    req.on('error', reject);
  });
}

// The containers labelled app=cellgate (and LABEL when given), as the engine lists them.
function labelled(label) {
  const labels = ['app=cellgate', ...(label ? [label] : [])];
  return engine(`/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`);
}

const dockerArgs = () => podman.args;

before(async () => {
  if (SKIP) return;
  podman = await startPodman();
  socket = podman.socket;
  server = await startServer({ name: 'backend-docker', args: [...dockerArgs(), '--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
  await podman?.stop();
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

test('the docker backend is chosen and logged, and hello world runs', { skip: SKIP }, async () => {
  assert.match(server.stderrText(), /sandbox backend: docker/);
  assert.match(server.stderrText(), /sandbox engine: Podman Engine/);
  const r = await callExec(client, { language: 'python', code: "print('Hello, World!')" });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'Hello, World!\n');
});

test('state across cells, and the session container is labelled', { skip: SKIP }, async () => {
  let r = await callExec(client, { language: 'python', code: 'x = 41', session_id: 'sess_dockerstate1' });
  expectStatus(r, 'success', server);
  r = await callExec(client, { language: 'python', code: 'print(x + 1)', session_id: 'sess_dockerstate1' });
  assert.equal(expectStatus(r, 'success', server).stdout, '42\n');
  const kinds = (await labelled()).map((c) => c.Labels['org.cellgate.kind']);
  assert.ok(kinds.includes('session'), `labels: ${JSON.stringify(kinds)}`);
  const one = (await labelled('org.cellgate.kind=session'))[0];
  assert.match(one.Labels['org.cellgate.instance'], /^[0-9a-f]{12}$/);
  assert.match(one.Labels['org.cellgate.session'], /^[0-9a-f]{12}$/);
  assert.match(one.Names[0], /^\/?cg-[0-9a-f]{12}-/);
});

test('stdin reaches python input() and a bash command, whose exit code comes back', { skip: SKIP }, async () => {
  let r = await callExec(client, { language: 'python', code: "print('Hi', input())", stdin: 'Alice' });
  assert.equal(expectStatus(r, 'success', server).stdout, 'Hi Alice\n');
  r = await callExec(client, { language: 'bash', code: 'read a; read b; echo "$b $a"; echo err >&2; exit 3', stdin: 'one\ntwo\n' });
  const s = r.structuredContent;
  assert.equal(s.stdout, 'two one\n', show(r, server));
  assert.equal(s.stderr, 'err\n', show(r, server));
  assert.equal(s.exit_code, 3, show(r, server));
});

test('a matplotlib plot comes back as an image', { skip: SKIP }, async () => {
  const r = await callExec(client, {
    language: 'python',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1,2,3],[3,1,2])\nplt.show()',
    session_id: 'sess_dockerplot01',
  });
  expectStatus(r, 'success', server);
  assert.ok(r.content.find((c) => c.type === 'image' && c.mimeType === 'image/png'), show(r, server));
});

test('a timeout interrupts the cell and keeps the session state', { skip: SKIP }, async () => {
  const sid = 'sess_dockertime01';
  expectStatus(await callExec(client, { language: 'python', code: 'y = 7', session_id: sid }), 'success', server);
  const r = await callExec(client, { language: 'python', code: 'import time\nwhile True: time.sleep(0.1)', session_id: sid, timeout: 2 });
  assert.equal(r.structuredContent.timed_out, true, show(r, server));
  const again = await callExec(client, { language: 'python', code: 'print(y * 6)', session_id: sid });
  assert.equal(expectStatus(again, 'success', server).stdout, '42\n');
});

test('no network: only lo inside, and no route out (nothing is sent off this machine)', { skip: SKIP }, async () => {
  const code = [
    'import os, socket, json',
    'ifaces = sorted(os.listdir("/sys/class/net"))',
    'routes = open("/proc/net/route").read().splitlines()[1:]',
    's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
    'try:',
    '    s.connect(("192.0.2.1", 9)); route = "connected"',  // TEST-NET-1: never routed anyway
    'except OSError as e:',
    '    route = "error %d" % e.errno',
    'print(json.dumps({"ifaces": ifaces, "routes": routes, "route": route}))',
  ].join('\n');
  const r = await callExec(client, { language: 'python', code });
  const out = JSON.parse(expectStatus(r, 'success', server).stdout);
  assert.deepEqual(out.ifaces, ['lo']);
  assert.deepEqual(out.routes, []);
  assert.match(out.route, /^error /);
});

test('host files are unreadable, the root is read-only, no capabilities, our seccomp profile', { skip: SKIP }, async () => {
  const code = [
    'import os, json, ctypes',
    'def can_read(p):',
    '    try: open(p, "rb").read(1); return True',
    '    except OSError: return False',
    'def can_write(p):',
    '    try: open(p, "w").write("x"); return True',
    '    except OSError: return False',
    'status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'rc = libc.syscall(101, 0, 0, 0, 0)',  // ptrace(PTRACE_TRACEME): Docker's default allows it, ours not
    'print(json.dumps({"uid": os.getuid(), "shadow": can_read("/etc/shadow"), "state": os.path.exists(' + JSON.stringify(server.stateDir) + '),',
    '  "repo": os.path.exists(' + JSON.stringify(REPO_ROOT) + '), "root_w": can_write("/usr/x"), "etc_w": can_write("/etc/x"),',
    '  "ws_w": can_write("/mnt/data/x"), "tmp_w": can_write("/tmp/x"), "caps": status["CapEff"].strip(),',
    '  "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(), "ptrace": [rc, ctypes.get_errno()]}))',
  ].join('\n');
  const r = await callExec(client, { language: 'python', code });
  const out = JSON.parse(expectStatus(r, 'success', server).stdout);
  assert.deepEqual(out, {
    uid: 65532, shadow: false, state: false, repo: false, root_w: false, etc_w: false, ws_w: true, tmp_w: true,
    caps: '0000000000000000', nnp: '1', seccomp: '2', ptrace: [-1, 1],
  });
});

test('a fork bomb is contained and a new session still runs', { skip: SKIP }, async () => {
  const code = 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass';
  const r = await callExec(client, { language: 'python', code, session_id: 'sess_dockerfork01', timeout: 5 }, { timeoutMs: 180000 });
  assert.equal(r.structuredContent.timed_out, true, show(r, server));
  const ok = await callExec(client, { language: 'python', code: "print('ok')", session_id: 'sess_dockerfork02' });
  assert.equal(expectStatus(ok, 'success', server).stdout, 'ok\n');
});

test('files: upload, write in the sandbox, read back and download over HTTP', { skip: SKIP }, async () => {
  const up = await call('upload_file', { filename: 'in.csv', content_base64: Buffer.from('a,b\n1,2\n').toString('base64') });
  assert.equal(up.isError, false, JSON.stringify(up));
  const sid = up.structuredContent.session_id;
  const r = await call('run_python', { session_id: sid, code: "open('/mnt/data/out.txt', 'w').write(open('/mnt/data/in.csv').read().upper())" });
  assert.equal(r.isError, false, JSON.stringify(r));
  const made = r.structuredContent.artifacts.find((a) => a.filename === 'out.txt');
  assert.ok(made, JSON.stringify(r.structuredContent));
  const read = await call('read_artifact', { session_id: sid, path: '/mnt/data/out.txt' });
  assert.equal(Buffer.from(read.structuredContent.content_base64, 'base64').toString(), 'A,B\n1,2\n');
  const body = await (await fetch(made.download_url)).text();
  assert.equal(body, 'A,B\n1,2\n');
});

test('after kill -9 of a server, the next start removes its containers by label', { skip: SKIP }, async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-docker-orphans-'));
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'orphans', version: '1' } } };
  const first = startRawServer(state, { args: [...dockerArgs(), '--cleanup-interval', '0'] });
  first.send(init);
  await first.next();
  first.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'execute_code', arguments: { language: 'python', code: 'print(1)', session_id: 'sess_dockerorph01' } } });
  const answer = await first.next();
  assert.equal(answer.result?.structuredContent?.stdout, '1\n', JSON.stringify(answer) + first.stderr());
  const instance = fs.readdirSync(path.join(state, 'instances'))[0];
  assert.match(instance, /^[0-9a-f]{12}$/);
  const mine = `org.cellgate.instance=${instance}`;
  assert.ok((await labelled(mine)).length >= 1, 'the session container is there');
  first.proc.kill('SIGKILL');
  await new Promise((resolve) => (first.proc.exitCode !== null || first.proc.signalCode ? resolve() : first.proc.once('exit', resolve)));
  assert.ok((await labelled(mine)).length >= 1, 'a killed server cannot clean up');

  const second = startRawServer(state, { args: [...dockerArgs(), '--cleanup-interval', '0'] });
  second.send(init);
  await second.next();
  let left = await labelled(mine);
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await sleep(100);
    left = await labelled(mine);
  }
  assert.deepEqual(left.map((c) => c.Names), [], second.stderr());
  second.proc.stdin.end();
  await new Promise((resolve) => (second.proc.exitCode !== null ? resolve() : second.proc.once('exit', resolve)));
  assert.deepEqual(await labelled(mine), []);
  fs.rmSync(state, { recursive: true, force: true });
});
