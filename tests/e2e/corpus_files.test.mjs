// Hostile corpus, files: symlinks, hardlinks and FIFOs planted by sandboxed code against every
// host-side file operation (read_artifact, list_artifacts, upload_file, the download route,
// the run directory's connection files, stdin files, command scripts and ipc sockets), path
// tricks, and FIFOs planted where the host writes its temporary files. Host canaries (a file
// and a unix socket) must never change or be connected to; calls must never block.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

import { callExec, sc, show, sleep } from './lib.mjs';
import { caseTable, py, secondSession, startCorpusServer } from './corpus.mjs';

const kase = caseTable('corpus_files');
const b64 = (t) => Buffer.from(t).toString('base64');
const CANARY_TEXT = 'host canary: never read, written or chowned by the sandbox\n';
// A host call that takes longer than this has blocked (on a FIFO, a lock, a hung kernel).
const NO_BLOCK_MS = 20000;

let server;
let bystander;
let canaryDir;
let canaryFile;
let canarySock;
let sockServer;
let sockConnections = 0;

before(async () => {
  canaryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-canary-'));
  canaryFile = path.join(canaryDir, 'secret.txt');
  fs.writeFileSync(canaryFile, CANARY_TEXT, { mode: 0o600 });
  canarySock = path.join(canaryDir, 'host.sock');
  sockServer = net.createServer((s) => {
    sockConnections++;
    s.destroy();
  });
  await new Promise((r) => sockServer.listen(canarySock, r));
  server = await startCorpusServer({ name: 'corpus-files', args: ['--http-listen', '127.0.0.1:0', '--interrupt-grace-ms', '1000'] });
  bystander = secondSession(server);
  await bystander.check('at start');
});

after(async () => {
  unblockFifos();
  await server?.close();
  await new Promise((r) => sockServer.close(r));
  fs.rmSync(canaryDir, { recursive: true, force: true });
});

/**
 * The canary file is untouched (owner the test's uid, mode 0600, same content) and the canary
 * socket was never connected to since `since` connections; throws with everything that changed.
 */
function canaryIntact(since = 0) {
  const problems = [];
  const st = fs.lstatSync(canaryFile);
  if (!st.isFile()) problems.push('canary replaced');
  if (st.uid !== process.getuid() || st.gid !== process.getgid()) problems.push(`canary owner changed to ${st.uid}:${st.gid}`);
  if ((st.mode & 0o7777) !== 0o600) problems.push(`canary mode changed to ${(st.mode & 0o7777).toString(8)}`);
  if (st.isFile() && fs.readFileSync(canaryFile, 'utf8') !== CANARY_TEXT) problems.push('canary content changed');
  if (sockConnections > since) problems.push(`the host socket was connected to ${sockConnections - since} times`);
  assert.deepEqual(problems, [], problems.join('; '));
}

/**
 * Opens for reading (non-blocking) every FIFO under the state dir named like a temporary file
 * of the server, so that a server blocked opening one for writing goes on. Test clean-up only.
 */
function unblockFifos() {
  if (!server) return;
  const walk = (dir, depth) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isFIFO() && e.name.endsWith(`.tmp.${server.pid}`)) {
        try {
          fs.closeSync(fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
        } catch {
          // gone
        }
      } else if (e.isDirectory() && depth < 6 && e.name !== 'workspace' && e.name !== 'rootfs') {
        walk(p, depth + 1);
      }
    }
  };
  walk(server.stateDir, 0);
}

const run = (args, timeoutMs = 120000) => callExec(server.client, args, { timeoutMs });
const call = (name, args, timeoutMs = NO_BLOCK_MS) => server.call(name, args, timeoutMs);
const ok = (r) => {
  assert.equal(r.isError ?? false, false, show(r, server));
  return sc(r);
};
/** A refused call: isError with one of the given seed 004 error names, and no canary text. */
function refused(r, names, label) {
  assert.equal(r.isError, true, `${label}: not refused: ${show(r, server)}`);
  assert.ok(names.includes(sc(r)?.error), `${label}: error ${sc(r)?.error}, expected ${names.join('/')}`);
  assert.ok(!JSON.stringify(r).includes('host canary'), `${label}: canary text in the answer`);
  return sc(r).error;
}
/** The session's download origin and token, from a file the session lists. */
async function downloadBase(sid) {
  const arts = ok(await call('list_artifacts', { session_id: sid })).artifacts;
  const u = new URL(arts[0].download_url);
  return { origin: u.origin, token: u.searchParams.get('token') };
}
/** GET (and HEAD) within NO_BLOCK_MS; returns [status, body]. */
async function get(url, method = 'GET') {
  const res = await fetch(url, { method, signal: AbortSignal.timeout(NO_BLOCK_MS) });
  return [res.status, method === 'HEAD' ? '' : await res.text()];
}

kase('symlinks against read_artifact, list_artifacts, upload_file and the download route',
  'links refused (invalid_path) or 404, never followed; host canary unchanged', async () => {
    const sid = 'sess_corpuslink001';
    const connectionsBefore = sockConnections;
    ok(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('seed') }));
    ok(await run({ language: 'python', session_id: sid, code: `
import os
os.symlink(${py(canaryFile)}, '/mnt/data/abs.txt')
os.symlink(${py(canaryDir)}, '/mnt/data/absdir')
os.symlink('/', '/mnt/data/root')
os.symlink('../../../../../../../../${canaryFile}', '/mnt/data/rel.txt')
os.symlink('/proc/self/root${canaryFile}', '/mnt/data/magic.txt')
os.symlink('abs.txt', '/mnt/data/chain.txt')
os.makedirs('/mnt/data/d', exist_ok=True)
os.symlink('/etc', '/mnt/data/d/etc')
os.symlink('loop', '/mnt/data/loop')
` }));
    const probes = ['abs.txt', 'absdir/secret.txt', `root${canaryFile}`, 'rel.txt', 'magic.txt', 'chain.txt', 'd/etc/passwd', 'loop'];
    const seen = {};
    for (const p of probes) seen[p] = refused(await call('read_artifact', { session_id: sid, path: p }), ['invalid_path', 'not_found'], `read ${p}`);
    const listed = ok(await call('list_artifacts', { session_id: sid })).artifacts.map((a) => a.filename);
    assert.deepEqual(listed, ['seed.txt'], `links listed: ${listed}`);
    refused(await call('upload_file', { session_id: sid, filename: 'absdir/secret.txt', content_base64: b64('pwned'), overwrite: true }), ['invalid_path'], 'upload through a dir link');
    refused(await call('upload_file', { session_id: sid, filename: 'absdir/new.txt', content_base64: b64('pwned') }), ['invalid_path'], 'upload new through a dir link');
    refused(await call('upload_file', { session_id: sid, filename: 'd/etc/new.txt', content_base64: b64('pwned') }), ['invalid_path'], 'upload into /etc link');
    ok(await call('upload_file', { session_id: sid, filename: 'abs.txt', content_base64: b64('mine'), overwrite: true }));
    assert.equal(Buffer.from(ok(await call('read_artifact', { session_id: sid, path: 'abs.txt' })).content_base64, 'base64').toString(), 'mine');
    const { origin, token } = await downloadBase(sid);
    for (const p of probes.filter((x) => x !== 'abs.txt')) {
      for (const m of ['GET', 'HEAD']) {
        const [st, body] = await get(`${origin}/files/${sid}/${p}?token=${token}`, m);
        assert.equal(st, 404, `${m} ${p}: ${st}`);
        assert.ok(!body.includes('host canary'));
      }
    }
    canaryIntact(connectionsBefore);
    assert.deepEqual(fs.readdirSync(canaryDir).sort(), ['host.sock', 'secret.txt']);
    await call('close_session', { session_id: sid });
    return `${probes.length} links: read ${[...new Set(Object.values(seen))].join('/')}, not listed, uploads refused or replace the link, HTTP 404; canary intact; ${await bystander.check()}`;
  });

kase('hardlinks: to files outside the workspace, and between workspace names',
  'links out fail (EXDEV/EPERM); an upload over one name never changes the other', async () => {
    const sid = 'sess_corpushard001';
    const out = JSON.parse(ok(await run({ language: 'python', session_id: sid, code: `
import errno, json, os
m = {}
for src in ['/run/cellgate/kernel-python.json', '/etc/passwd', '/usr/bin/python3', '/tmp', '/proc/self/environ']:
    try:
        os.link(src, '/mnt/data/h-' + os.path.basename(src)); m[src] = 'LINKED'
    except OSError as e:
        m[src] = 'FAILED ' + errno.errorcode.get(e.errno, '?')
open('/mnt/data/a.txt', 'w').write('A')
os.link('/mnt/data/a.txt', '/mnt/data/b.txt')
print(json.dumps(m))
` })).stdout.trim());
    for (const [src, v] of Object.entries(out)) assert.ok(v.startsWith('FAILED'), `hardlink to ${src}: ${v}`);
    ok(await call('upload_file', { session_id: sid, filename: 'b.txt', content_base64: b64('B'), overwrite: true }));
    const a = Buffer.from(ok(await call('read_artifact', { session_id: sid, path: 'a.txt' })).content_base64, 'base64').toString();
    assert.equal(a, 'A', 'an upload wrote through a hardlink');
    await call('close_session', { session_id: sid });
    return `${Object.entries(out).map(([k, v]) => `${path.basename(k)} ${v.split(' ')[1]}`).join(', ')}; upload replaced b.txt only; ${await bystander.check()}`;
  });

kase('FIFOs and special files in the workspace against every file tool and the route',
  `every call answers within ${NO_BLOCK_MS / 1000} s; FIFOs refused or 404; no device nodes`, async () => {
    const sid = 'sess_corpusfifo001';
    ok(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('seed') }));
    const made = ok(await run({ language: 'python', session_id: sid, code: `
import os
os.mkfifo('/mnt/data/pipe.txt'); os.mkfifo('/mnt/data/pipe.png')
os.makedirs('/mnt/data/outputs', exist_ok=True); os.mkfifo('/mnt/data/outputs/fifo.csv')
try:
    os.mknod('/mnt/data/null', 0o20666, os.makedev(1, 3)); print('MKNOD OK')
except OSError as e:
    print('mknod', e.errno)
` })).stdout;
    assert.ok(!made.includes('MKNOD OK'), 'a device node was created');
    const t0 = Date.now();
    const read = [];
    for (const p of ['pipe.txt', 'pipe.png', 'outputs/fifo.csv']) read.push(refused(await call('read_artifact', { session_id: sid, path: p }), ['invalid_path', 'not_found'], `read ${p}`));
    const listed = ok(await call('list_artifacts', { session_id: sid })).artifacts.map((a) => a.filename);
    assert.ok(!listed.some((n) => /pipe|fifo/.test(n)), `FIFOs listed: ${listed}`);
    const { origin, token } = await downloadBase(sid);
    for (const p of ['pipe.txt', 'pipe.png', 'outputs/fifo.csv']) assert.equal((await get(`${origin}/files/${sid}/${p}?token=${token}`))[0], 404, p);
    ok(await call('upload_file', { session_id: sid, filename: 'pipe.txt', content_base64: b64('over'), overwrite: true }));
    // A run whose scan meets the FIFOs (before and after) also answers.
    ok(await run({ language: 'bash', session_id: sid, code: 'mkfifo /mnt/data/new.fifo; echo made' }, NO_BLOCK_MS));
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    await call('close_session', { session_id: sid });
    return `read ${[...new Set(read)].join('/')}, unlisted, HTTP 404, upload replaced a FIFO, scan fine, all in ${secs} s; ${await bystander.check()}`;
  });

kase('FIFOs planted where the host writes its temporary files (connection, stdin, command files)',
  `the next JavaScript call with stdin and the next bash call answer within their timeout; the session is not left busy`, async () => {
    const sid = 'sess_corpusfifotmp';
    ok(await run({ language: 'javascript', session_id: sid, code: '1' }));
    // Every pid: the sandbox cannot see the server's pid, so it plants them all (about 1 s).
    const plant = await run({ language: 'python', session_id: sid, timeout: 60, code: `
import os
made = 0
for d in ['/run/cellgate', '/run/cellgate/ipc']:
    for base in ['stdin-javascript', 'stdin-python', 'kernel-javascript.json', 'kernel-python.json']:
        for pid in range(2, 65536):
            try:
                os.mkfifo(f'{d}/{base}.tmp.{pid}'); made += 1
            except OSError:
                break
print(made)` }, 120000);
    const planted = Number(sc(plant).stdout?.trim());
    const t0 = Date.now();
    let js;
    try {
      js = await run({ language: 'javascript', session_id: sid, timeout: 5, stdin: 'line\n', code: "require('fs').readFileSync(0, 'utf8')" }, NO_BLOCK_MS);
    } catch (err) {
      js = err;
    }
    const jsSecs = (Date.now() - t0) / 1000;
    let next;
    try {
      next = await run({ language: 'bash', session_id: sid, timeout: 5, code: 'echo alive' }, NO_BLOCK_MS);
    } catch (err) {
      next = err;
    }
    unblockFifos();
    assert.ok(!(js instanceof Error), `the javascript call with stdin blocked: ${js?.message} after ${jsSecs.toFixed(1)} s`);
    assert.ok(!(next instanceof Error), `the next call blocked: ${next?.message}`);
    assert.notEqual(sc(next).error_code, 'SESSION_BUSY', 'the session was left busy');
    assert.equal(sc(next).stdout, 'alive\n');
    await call('close_session', { session_id: sid });
    return `${planted} FIFOs planted; javascript ${sc(js).status} in ${jsSecs.toFixed(1)} s; next ${sc(next).status}; ${await bystander.check()}`;
  });

// The swappers run inside the kernels themselves (a Python thread, a JavaScript worker):
// restarting one kernel kills every process of the sandbox but the other kernel, so the other
// kernel's swapper is running while the host writes the new kernel's files and connects to
// its sockets.
const SWAP_NAMES = (() => {
  const names = [];
  for (const l of ['javascript', 'python']) {
    names.push([`kernel-${l}.json`, 'file'], [`stdin-${l}`, 'file']);
    for (const sep of [':', '-']) for (let n = 1; n <= 5; n++) names.push([`${l}${sep}${n}`, 'sock']);
  }
  return names;
})();

kase('symlink swaps raced against the host\'s writes and connects in the run dir (kernel restarts)',
  'host canary file keeps owner, mode and content; the host canary socket is never connected to', async () => {
    const sid = 'sess_corpusrace001';
    const pairs = SWAP_NAMES.map(([n, kind]) => [n, kind === 'sock' ? canarySock : canaryFile]);
    const pySwap = `
import os, threading, time
def swap(pairs, secs):
    global swaps
    end = time.time() + secs
    while time.time() < end:
        for d in ('/run/cellgate', '/run/cellgate/ipc'):
            for n, t in pairs:
                tmp = f'{d}/.p{swaps}'
                swaps += 1
                try:
                    os.symlink(t, tmp); os.rename(tmp, f'{d}/{n}')
                except OSError:
                    pass
swaps = 0
threading.Thread(target=swap, args=(${py(pairs)}, 8), daemon=True).start()`;
    const jsSwap = `
const { Worker } = require('worker_threads');
new Worker(\`
const fs = require('fs'); const { workerData } = require('worker_threads');
const end = Date.now() + 8000; let i = 0;
while (Date.now() < end) for (const d of ['/run/cellgate', '/run/cellgate/ipc']) for (const [n, t] of workerData) {
  const tmp = d + '/.j' + (i++);
  try { fs.symlinkSync(t, tmp); fs.renameSync(tmp, d + '/' + n); } catch (e) {}
}\`, { eval: true, workerData: ${JSON.stringify(pairs)} });
'armed'`;
    // A start is attempted (the host writes the files and connects) whenever the call is
    // answered; the kernel may not come up when the swapper replaced its own connection file,
    // which harms only this session.
    const starts = { python: 0, javascript: 0 };
    const up = { python: 0, javascript: 0 };
    const lastFailure = {};
    const quiet = (p) => p.catch((e) => e);
    const note = (lang, r) => {
      if (r instanceof Error) lastFailure[lang] = r.message.slice(0, 120);
      else if (sc(r).status !== 'success') lastFailure[lang] = `${sc(r).status}: ${String(sc(r).error_message).slice(0, 120)}`;
    };
    // Bounded by rounds, not time: a round takes 10 to 30 s (a failed restart restarts the
    // container), and the race needs kernels to really start under the swappers.
    for (let round = 0; round < 6 && !(starts.javascript >= 3 && starts.python >= 3); round++) {
      // Python's swapper runs while the JavaScript kernel restarts, and the other way round.
      await quiet(run({ language: 'python', session_id: sid, timeout: 10, code: pySwap }, 30000));
      await quiet(run({ language: 'javascript', session_id: sid, timeout: 10, code: 'process.exit(0)' }, 30000));
      let r = await quiet(run({ language: 'javascript', session_id: sid, timeout: 10, stdin: 'x\n', code: jsSwap }, 30000));
      if (!(r instanceof Error) && sc(r).status !== 'success') r = await quiet(run({ language: 'javascript', session_id: sid, timeout: 10, stdin: 'x\n', code: jsSwap }, 30000));
      if (!(r instanceof Error)) starts.javascript++;
      if (!(r instanceof Error) && sc(r).status === 'success') up.javascript++;
      else note('javascript', r);
      await quiet(run({ language: 'python', session_id: sid, timeout: 10, code: 'import os\nos._exit(0)' }, 30000));
      r = await quiet(run({ language: 'python', session_id: sid, timeout: 10, code: '1' }, 30000));
      if (!(r instanceof Error) && sc(r).status !== 'success') r = await quiet(run({ language: 'python', session_id: sid, timeout: 10, code: '1' }, 30000));
      if (!(r instanceof Error)) starts.python++;
      if (!(r instanceof Error) && sc(r).status === 'success') up.python++;
      else note('python', r);
    }
    await call('close_session', { session_id: sid }).catch(() => {});
    canaryIntact();
    // The race proves nothing unless kernels really started under the swappers.
    assert.ok(starts.javascript >= 2 && starts.python >= 2, `too few kernel starts under the swappers: ${JSON.stringify(starts)}; last failures ${JSON.stringify(lastFailure)}`);
    return `${starts.javascript} javascript and ${starts.python} python kernel starts under the other kernel's swapper (${up.javascript} and ${up.python} came up); canary intact, 0 socket connections; ${await bystander.check()}`;
  });

kase('path tricks against upload_file, read_artifact and the download route',
  'refused (invalid_filename/invalid_path/not_found, JSON-RPC invalid params for NUL) or 404; nothing written outside the workspace', async () => {
    const sid = 'sess_corpuspath001';
    const connectionsBefore = sockConnections;
    ok(await call('upload_file', { session_id: sid, filename: 'seed.txt', content_base64: b64('seed') }));
    const bad = ['../escape.txt', '/etc/escape.txt', 'a/../../escape.txt', '/mnt/data/../escape.txt', '.', '..', '',
      'x'.repeat(5000), 'outputs/../../escape.txt', 'line\nbreak.txt', 'tab\there.txt', 'dir/', '/mnt/data'];
    const codes = {};
    for (const f of bad) {
      try {
        codes[f.slice(0, 20)] = refused(await call('upload_file', { session_id: sid, filename: f, content_base64: b64('x') }), ['invalid_filename', 'invalid_path', 'invalid_params', 'file_exists'], `upload ${JSON.stringify(f.slice(0, 40))}`);
      } catch (err) {
        if (err.code === -32602) codes[f.slice(0, 20)] = 'JSON-RPC -32602';
        else throw err;
      }
    }
    await assert.rejects(call('upload_file', { session_id: sid, filename: 'nul\u0000.txt', content_base64: b64('x') }), (e) => e.code === -32602);
    for (const p of ['/etc/passwd', '/mnt/data/../../etc/passwd', '../../etc/passwd', '/proc/self/environ', 'file:///etc/passwd', '/mnt/data/', '.', canaryFile]) {
      refused(await call('read_artifact', { session_id: sid, path: p }), ['invalid_path', 'not_found', 'invalid_params'], `read ${p}`);
    }
    const { origin, token } = await downloadBase(sid);
    const routes = ['..%2F..%2F..%2Fetc%2Fpasswd', '%2e%2e/%2e%2e/etc/passwd', '%252e%252e%252fetc%252fpasswd', '..\\..\\etc\\passwd',
      '%c0%ae%c0%ae/etc/passwd', 'seed.txt%00.png', `%2F${canaryFile.replace(/\//g, '%2F')}`, '/etc/passwd', 'outputs/../../../etc/passwd'];
    const statuses = {};
    for (const r of routes) {
      const [st, body] = await get(`${origin}/files/${sid}/${r}?token=${token}`);
      statuses[r] = st;
      assert.ok([400, 404].includes(st), `GET ${r}: ${st}`);
      assert.ok(!/root:|host canary/.test(body), `GET ${r} leaked`);
    }
    // Nothing named escape.txt anywhere in the state dir.
    const found = [];
    const walk = (d, depth) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.name.includes('escape')) found.push(path.join(d, e.name));
        if (e.isDirectory() && !e.isSymbolicLink() && depth < 8 && e.name !== 'rootfs') walk(path.join(d, e.name), depth + 1);
      }
    };
    walk(server.stateDir, 0);
    assert.deepEqual(found, []);
    canaryIntact(connectionsBefore);
    await call('close_session', { session_id: sid });
    return `${bad.length} upload names refused (${[...new Set(Object.values(codes))].join('/')}), NUL -32602, 8 reads refused, ${routes.length} routes ${[...new Set(Object.values(statuses))].join('/')}; ${await bystander.check()}`;
  });

kase('a session reaching another\'s files through the file tools', 'B\'s id never opens A\'s files; A\'s workspace unchanged by calls on B', async () => {
  const a = 'sess_corpusowna001';
  const b = 'sess_corpusownb001';
  ok(await call('upload_file', { session_id: a, filename: 'mine.txt', content_base64: b64('A-only') }));
  ok(await call('upload_file', { session_id: b, filename: 'seed.txt', content_base64: b64('B') }));
  const hostA = (() => {
    const inst = path.join(server.stateDir, 'instances');
    for (const i of fs.readdirSync(inst)) {
      const sessions = path.join(inst, i, 'sessions');
      for (const s of fs.existsSync(sessions) ? fs.readdirSync(sessions) : []) {
        if (fs.existsSync(path.join(sessions, s, 'disk', 'workspace', 'mine.txt'))) return { dir: path.join(sessions, s), name: s };
      }
    }
    return null;
  })();
  assert.ok(hostA, 'A found on the host');
  for (const p of [`../../${hostA.name}/disk/workspace/mine.txt`, `../../../sessions/${hostA.name}/disk/workspace/mine.txt`, `${hostA.dir}/disk/workspace/mine.txt`]) {
    refused(await call('read_artifact', { session_id: b, path: p }), ['invalid_path', 'not_found'], `read A via B: ${p}`);
    refused(await call('upload_file', { session_id: b, filename: p, content_base64: b64('pwned'), overwrite: true }), ['invalid_path', 'invalid_filename'], `upload A via B: ${p}`);
  }
  // B's sandbox plants a link to A's host workspace; the host never follows it.
  ok(await run({ language: 'bash', session_id: b, code: `ln -s ${hostA.dir}/disk/workspace /mnt/data/a-ws && echo ok` }));
  refused(await call('read_artifact', { session_id: b, path: 'a-ws/mine.txt' }), ['invalid_path', 'not_found'], 'read through a link to A');
  refused(await call('upload_file', { session_id: b, filename: 'a-ws/mine.txt', content_base64: b64('pwned'), overwrite: true }), ['invalid_path'], 'upload through a link to A');
  assert.equal(fs.readFileSync(path.join(hostA.dir, 'disk', 'workspace', 'mine.txt'), 'utf8'), 'A-only');
  for (const sid of [a, b]) await call('close_session', { session_id: sid });
  return `6 cross-session reads/uploads and 2 through a planted link refused; A unchanged; ${await bystander.check()}`;
});
