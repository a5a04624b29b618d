// The backend contract (issue 14): the same end-to-end scenarios against every sandbox
// backend this machine has. contract_<backend>.test.mjs each call contractSuite with how to
// start that backend; a backend that cannot run here is skipped with the reason, so ctest's
// list says which ran. Scenarios: hello, state, stdin, a plot, a timeout with state kept, no
// network (this machine's own listeners), host files unreadable, memory and fork bombs
// contained, files and downloads, and the clean-up of a kill -9'd server's sandboxes.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ownListeners, pidsWithCmdline } from './corpus.mjs';
import { REPO_ROOT, callExec, expectStatus, sc, show, sleep, startRawServer, startServer } from './lib.mjs';

// The memory bomb stops by itself here, so a sandbox without a memory limit fails the test
// instead of taking the host down.
const MEMBOMB_CAP_GIB = 12;
const INIT = {
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'contract', version: '1' } },
};

// A few of the host user's own files (the home directory itself may exist in an image).
function homeEntries() {
  try {
    return fs.readdirSync(os.homedir()).slice(0, 5).map((name) => path.join(os.homedir(), name));
  } catch {
    return [];
  }
}

/**
 * Registers the contract's tests for BACKEND. opts: { skip: false or why it cannot run here,
 * setup: async () => ({ args: the server's backend flags, stop?: async () => {} }) }.
 */
export function contractSuite(backend, { skip = false, setup }) {
  describe(`backend contract: ${backend}`, { skip }, () => {
    let env;
    let server;
    let client;
    let secretDir;

    before(async () => {
      env = await setup();
      secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-contract-secret-'));
      fs.writeFileSync(path.join(secretDir, 'secret.txt'), 'hunter2\n');
      server = await startServer({ name: `contract-${backend}`, args: [...env.args, '--http-listen', '127.0.0.1:0'] });
      client = server.client;
    });

    after(async () => {
      await server?.close();
      await env?.stop?.();
      if (secretDir) fs.rmSync(secretDir, { recursive: true, force: true });
    });

    const run = (args, opts) => callExec(client, { language: 'python', ...args }, opts);
    const ok = async (args, opts) => expectStatus(await run(args, opts), 'success', server);

    test('the backend is the one asked for, and hello world runs', async () => {
      assert.match(server.stderrText(), new RegExp(`sandbox backend: ${backend}\\b`));
      assert.equal((await ok({ code: "print('Hello, World!')" })).stdout, 'Hello, World!\n');
    });

    test('list_sessions says which limits the sandboxes are held to', async () => {
      const r = await client.callTool({ name: 'list_sessions', arguments: {} });
      const limits = r.structuredContent.limits;
      assert.equal(limits.backend, backend);
      assert.ok(limits.enforced.some((l) => /^memory/.test(l)) && limits.enforced.some((l) => /no network/.test(l)), JSON.stringify(limits));
      if (backend === 'rootless') {
        assert.ok(limits.not_enforced.some((l) => /CPU share/.test(l)), JSON.stringify(limits));
        assert.match(server.stderrText(), /rootless sandboxes: enforced .*; NOT enforced /);
      } else assert.deepEqual(limits.not_enforced, []);
    });

    test('state is kept across cells of a session', async () => {
      await ok({ code: 'x = 41', session_id: 'sess_contractstate' });
      assert.equal((await ok({ code: 'print(x + 1)', session_id: 'sess_contractstate' })).stdout, '42\n');
    });

    test('stdin reaches python input() and a bash script, whose exit code comes back', async () => {
      assert.equal((await ok({ code: "print('Hi', input())", stdin: 'Alice' })).stdout, 'Hi Alice\n');
      const r = await callExec(client, { language: 'bash', code: 'read a; read b; echo "$b $a"; echo err >&2; exit 3', stdin: 'one\ntwo\n' });
      const s = sc(r);
      assert.deepEqual([s.stdout, s.stderr, s.exit_code], ['two one\n', 'err\n', 3], show(r, server));
    });

    test('a matplotlib plot comes back as a PNG image', async () => {
      const code = 'import matplotlib.pyplot as plt\nplt.plot([1,2,3],[3,1,2])\nplt.show()';
      const r = await run({ code, session_id: 'sess_contractplot' });
      expectStatus(r, 'success', server);
      const image = r.content.find((c) => c.type === 'image' && c.mimeType === 'image/png');
      assert.ok(image, show(r, server));
      assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG');
    });

    test('a timeout interrupts the cell and keeps the session state', async () => {
      const sid = 'sess_contracttime';
      await ok({ code: 'y = 7', session_id: sid });
      const r = await run({ code: 'import time\nwhile True: time.sleep(0.1)', session_id: sid, timeout: 2 });
      assert.equal(sc(r).timed_out, true, show(r, server));
      assert.equal((await ok({ code: 'print(y * 6)', session_id: sid })).stdout, '42\n');
    });

    test("no network: only lo, no route, and this machine's own listeners cannot be reached", async () => {
      const listeners = await ownListeners();
      try {
        const code = [
          'import os, socket, json',
          `targets = ${JSON.stringify(listeners.targets)}`,
          'reached = []',
          'for host, port in targets:',
          '    fam = socket.AF_INET6 if ":" in host else socket.AF_INET',
          '    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(2)',
          '    try: s.connect((host, port)); reached.append(host)',
          '    except OSError: pass',
          '    finally: s.close()',
          'print(json.dumps({"ifaces": sorted(os.listdir("/sys/class/net")),',
          '  "routes": open("/proc/net/route").read().splitlines()[1:], "reached": reached}))',
        ].join('\n');
        const out = JSON.parse((await ok({ code })).stdout);
        assert.deepEqual(out, { ifaces: ['lo'], routes: [], reached: [] });
        assert.equal(listeners.accepted(), 0, 'a host listener accepted a connection from the sandbox');
      } finally {
        await listeners.close();
      }
    });

    test('host files are unreadable; only the workspace and /tmp are writable; no capabilities; our seccomp profile', async () => {
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
        'rc = libc.syscall(101, 0, 0, 0, 0)', // ptrace(PTRACE_TRACEME): denied by our profile
        `paths = ${JSON.stringify([path.join(secretDir, 'secret.txt'), server.stateDir, REPO_ROOT, ...homeEntries()])}`,
        'print(json.dumps({"host": [p for p in paths if os.path.exists(p)], "shadow": can_read("/etc/shadow"),',
        '  "usr_w": can_write("/usr/x"), "etc_w": can_write("/etc/x"), "root_w": can_write("/x"),',
        '  "ws_w": can_write("/mnt/data/x"), "tmp_w": can_write("/tmp/x"), "caps": status["CapEff"].strip(),',
        '  "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(), "ptrace": [rc, ctypes.get_errno()]}))',
      ].join('\n');
      const out = JSON.parse((await ok({ code })).stdout);
      assert.deepEqual(out, {
        host: [], shadow: false, usr_w: false, etc_w: false, root_w: false, ws_w: true, tmp_w: true,
        caps: '0000000000000000', nnp: '1', seccomp: '2', ptrace: [-1, 1],
      });
    });

    test('a memory bomb fails the cell and nothing else', async () => {
      const chunks = Math.floor((MEMBOMB_CAP_GIB * 1024) / 50);
      const code = `a = []\nfor _ in range(${chunks}):\n    a.append(bytearray(50*1024*1024))\nprint('UNLIMITED', len(a))`;
      const r = await run({ code, session_id: 'sess_contractmem1', timeout: 60 }, { timeoutMs: 180000 });
      assert.ok(!sc(r).stdout.includes('UNLIMITED'), `no memory limit: ${show(r, server)}`);
      assert.equal(r.isError, true, show(r, server));
      assert.match(`${sc(r).stderr}\n${sc(r).error_message ?? ''}`, /MemoryError|out of memory|memory/i, show(r, server));
      assert.equal((await ok({ code: "print('ok')", session_id: 'sess_contractmem2' })).stdout, 'ok\n');
    });

    test('a fork bomb is contained and a new session still runs', async () => {
      const code = 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass';
      const r = await run({ code, session_id: 'sess_contractfork1', timeout: 5 }, { timeoutMs: 180000 });
      assert.ok(['timeout', 'execution_error'].includes(sc(r).status), show(r, server));
      assert.equal((await ok({ code: "print('ok')", session_id: 'sess_contractfork2' })).stdout, 'ok\n');
      await client.ping({ timeout: 10000 });
    });

    test('files: upload, write in the sandbox, read back and download over HTTP', async () => {
      const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
      const up = await call('upload_file', { filename: 'in.csv', content_base64: Buffer.from('a,b\n1,2\n').toString('base64') });
      assert.equal(up.isError, false, JSON.stringify(up));
      const sid = up.structuredContent.session_id;
      const r = await call('run_python', { session_id: sid, code: "open('/mnt/data/out.txt', 'w').write(open('/mnt/data/in.csv').read().upper())" });
      assert.equal(r.isError, false, JSON.stringify(r));
      const made = r.structuredContent.artifacts.find((a) => a.filename === 'out.txt');
      assert.ok(made, JSON.stringify(r.structuredContent));
      const read = await call('read_artifact', { session_id: sid, path: '/mnt/data/out.txt' });
      assert.equal(Buffer.from(read.structuredContent.content_base64, 'base64').toString(), 'A,B\n1,2\n');
      assert.equal(await (await fetch(made.download_url)).text(), 'A,B\n1,2\n');
    });

    test('the warm pool hands a one-shot run a ready sandbox', async () => {
      const pooled = await startServer({ name: `contract-${backend}-pool`, args: [...env.args, '--pool', 'python=1', '--log-level', 'debug', '--http-listen', 'off'] });
      try {
        for (let i = 0; i < 300 && !/pool: a python sandbox is ready/.test(pooled.stderrText()); i++) await sleep(100);
        assert.match(pooled.stderrText(), /pool: a python sandbox is ready/);
        const r = await callExec(pooled.client, { language: 'python', code: 'print(6 * 7)' });
        assert.equal(expectStatus(r, 'success', pooled).stdout, '42\n');
        assert.match(pooled.stderrText(), /pool: python sandbox \w+ claimed by a one-shot run/);
      } finally {
        await pooled.close();
      }
    });

    test("after kill -9 of a server, the next start removes its sandboxes' processes", async () => {
      const state = fs.mkdtempSync(path.join(os.tmpdir(), `cg-contract-orphans-${backend}-`));
      const mark = `cgorphan${randomBytes(6).toString('hex')}`;
      const args = [...env.args, '--cleanup-interval', '0'];
      const first = startRawServer(state, { args });
      first.send(INIT);
      await first.next();
      // A process in the session's sandbox that would outlive its kernel, named by MARK.
      const code = `import subprocess\nsubprocess.Popen(['python3', '-c', 'import time; time.sleep(86400)', '${mark}'], start_new_session=True)\nprint('started')`;
      first.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'execute_code', arguments: { language: 'python', code, session_id: 'sess_contractorph' } } });
      const answer = await first.next();
      assert.equal(answer.result?.structuredContent?.stdout, 'started\n', JSON.stringify(answer) + first.stderr());
      for (let i = 0; i < 50 && pidsWithCmdline(mark).length === 0; i++) await sleep(100);
      assert.ok(pidsWithCmdline(mark).length > 0, 'the marked process runs in the sandbox');
      first.proc.kill('SIGKILL');
      await new Promise((resolve) => (first.proc.exitCode !== null || first.proc.signalCode ? resolve() : first.proc.once('exit', resolve)));
      await sleep(500);
      assert.ok(pidsWithCmdline(mark).length > 0, 'a kill -9 leaves the sandbox behind (nothing to clean up otherwise)');

      const second = startRawServer(state, { args });
      second.send(INIT);
      await second.next();
      for (let i = 0; i < 150 && pidsWithCmdline(mark).length > 0; i++) await sleep(100);
      assert.deepEqual(pidsWithCmdline(mark), [], `the orphan's processes are still there:\n${second.stderr()}`);
      second.proc.stdin.end();
      await new Promise((resolve) => (second.proc.exitCode !== null ? resolve() : second.proc.once('exit', resolve)));
      fs.rmSync(state, { recursive: true, force: true });
    });
  });
}
