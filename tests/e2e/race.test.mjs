// Symlink and FIFO races against every host-side write and connect (issue 9, findings 1, 2
// and 7): sandboxed code swaps links to a host canary file and a host canary socket over
// every name the host writes or connects to, while the host starts kernels, writes
// connection files, stdin files, command scripts, display outputs, uploads and full-output
// files. The canary's owner, mode and content and the socket's connection count must not
// change. Also: a state dir of any length.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, sc, show, sleep, startServer } from './lib.mjs';

const RACE_SECONDS = Number(process.env.CELLGATE_E2E_RACE_SECONDS || 20);

let server;
let client;
let canaryDir;
let canaryFile;
let canarySock;
let canaryServer;
let canaryConnections = 0;

before(async () => {
  canaryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-canary-'));
  canaryFile = path.join(canaryDir, 'secret');
  fs.writeFileSync(canaryFile, 'canary content\n', { mode: 0o600 });
  fs.chmodSync(canaryFile, 0o600);
  canarySock = path.join(canaryDir, 'host.sock');
  canaryServer = net.createServer((sock) => {
    canaryConnections++;
    sock.destroy();
  });
  await new Promise((resolve, reject) => {
    canaryServer.once('error', reject);
    canaryServer.listen(canarySock, resolve);
  });
  // A start the attacker breaks (its sockets swapped for links) gives up at 30 s: a good
  // JavaScript start on a loaded machine took 8-13 s (10 s failed a parallel CI run).
  server = await startServer({ args: ['--kernel-start-timeout', '30', '--interrupt-grace-ms', '500'] });
  client = server.client;
});

after(async () => {
  await server?.close();
  canaryServer?.close();
  if (canaryDir) fs.rmSync(canaryDir, { recursive: true, force: true });
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

function canaryState() {
  const st = fs.statSync(canaryFile);
  return { uid: st.uid, gid: st.gid, mode: st.mode & 0o7777, content: fs.readFileSync(canaryFile, 'utf8') };
}

// Swaps links over every name the host uses for SECONDS (MODE 'all'; 'workspace' leaves
// the kernels' ipc dir alone so they can start); keeps its counts in
// /mnt/data/race-counts.json. Links name the host canaries by their host paths.
function attacker(seconds, mode) {
  return `
import json, os, time
file_target = ${JSON.stringify(canaryFile)}
sock_target = ${JSON.stringify(canarySock)}
dir_target = ${JSON.stringify(canaryDir)}
names = {}
for lang, sep in (('python', '-'), ('javascript', ':')):
    for port in range(1, 6):
        names['/run/cellgate/%s%s%d' % (lang, sep, port)] = sock_target
        if '${mode}' == 'all':
            names['/run/cellgate/ipc/%s%s%d' % (lang, sep, port)] = sock_target
    names['/run/cellgate/kernel-%s.json' % lang] = file_target
    if '${mode}' == 'all':
        names['/run/cellgate/ipc/kernel-%s.json' % lang] = file_target
names['/run/cellgate/stdin-javascript'] = file_target
names['/mnt/data/up.txt'] = file_target
counts = {'ok': {}, 'failed': {}}
def save():
    with open('/mnt/data/.race-counts.tmp', 'w') as f:
        json.dump(counts, f)
    os.replace('/mnt/data/.race-counts.tmp', '/mnt/data/race-counts.json')
deadline = time.time() + ${seconds}
last_save = 0
n = 0
while time.time() < deadline:
    for name, target in names.items():
        tmp = os.path.join(os.path.dirname(name), '.swap%d' % n)
        n += 1
        try:
            os.symlink(target, tmp)
            os.replace(tmp, name)
            counts['ok'][name] = counts['ok'].get(name, 0) + 1
        except OSError:
            counts['failed'][name] = counts['failed'].get(name, 0) + 1
            try: os.unlink(tmp)
            except OSError: pass
    # The outputs directory itself, swapped for a link to the host canary directory.
    try:
        os.makedirs('/mnt/data/outputs', exist_ok=True)
        os.rename('/mnt/data/outputs', '/mnt/data/outputs.real')
        os.symlink(dir_target, '/mnt/data/outputs')
        time.sleep(0.001)
        os.unlink('/mnt/data/outputs')
        os.rename('/mnt/data/outputs.real', '/mnt/data/outputs')
        counts['ok']['outputs-dir'] = counts['ok'].get('outputs-dir', 0) + 1
    except OSError:
        counts['failed']['outputs-dir'] = counts['failed'].get('outputs-dir', 0) + 1
    if time.time() - last_save > 0.2:
        save()
        last_save = time.time()
save()
`;
}

/** Starts the attacker in the background in session SID (it outlives the bash call). */
async function startAttacker(sid, seconds, mode) {
  const code = attacker(seconds, mode);
  await call('upload_file', { session_id: sid, filename: 'attack.py', content_base64: Buffer.from(code).toString('base64'), overwrite: true });
  const r = await callExec(client, { language: 'bash', session_id: sid, code: 'nohup python3 /mnt/data/attack.py >/dev/null 2>&1 &\nsleep 0.3\necho started' });
  expectStatus(r, 'success', server);
}

async function attackerCounts(sid) {
  const r = await callExec(client, { language: 'bash', session_id: sid, code: 'cat /mnt/data/race-counts.json' });
  return JSON.parse(expectStatus(r, 'success', server).stdout);
}

function addCounts(total, report) {
  for (const kind of ['ok', 'failed'])
    for (const [name, n] of Object.entries(report[kind])) total[kind][name] = (total[kind][name] ?? 0) + n;
}

test('symlink swaps against every host-side write and connect leave the host canaries untouched', async () => {
  const before = canaryState();
  const total = { ok: {}, failed: {} };
  const ops = { calls: 0, status: {} };
  const run = async (sid, step) => {
    const r = await callExec(client, { session_id: sid, ...step });
    const key = `${step.language}:${step.code.slice(-12)}:${sc(r).status}`;
    ops.status[key] = (ops.status[key] ?? 0) + 1;
    ops.calls++;
  };

  // First half: kernels start (connection files written, ipc sockets connected) in fresh
  // sessions whose attacker swaps every name, the kernels' own included (so these starts
  // may fail: the sandbox breaks its own kernels, nothing more).
  const mid = Date.now() + (RACE_SECONDS * 1000) / 2;
  for (let i = 0; Date.now() < mid; i++) {
    const sid = `race-start-${i}`;
    await startAttacker(sid, 8, 'all');
    await run(sid, { language: 'python', code: 'print(1)', timeout: 10 });
    await run(sid, { language: 'javascript', code: 'console.log(1)', timeout: 10 });
    addCounts(total, await attackerCounts(sid));
    await call('close_session', { session_id: sid });
  }

  // Second half: the JavaScript kernel's stdin file, bash scripts, display outputs,
  // full-output files and uploads, under an attacker that leaves the ipc dir alone.
  const sid = 'race';
  // Its kernels start before the attack (starts are the first half's subject), so each
  // step below is the host's writes under attack, not a start that the load may slow.
  for (const language of ['python', 'javascript'])
    expectStatus(await callExec(client, { session_id: sid, language, code: '1', timeout: 60 }), 'success', server);
  await startAttacker(sid, RACE_SECONDS / 2, 'workspace');
  const png =
    'import base64\nfrom IPython.display import Image, display\n' +
    "display(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')))";
  const steps = [
    { language: 'python', code: png, timeout: 10 },
    { language: 'python', code: "print('y' * 200000)", timeout: 10 },
    { language: 'javascript', code: "require('fs').readFileSync(0, 'utf8')", stdin: 'x', timeout: 10 },
    { language: 'bash', code: 'echo hi', timeout: 10 },
  ];
  const deadline = Date.now() + (RACE_SECONDS * 1000) / 2;
  while (Date.now() < deadline) {
    for (const step of steps) await run(sid, step);
    await call('upload_file', { session_id: sid, filename: 'up.txt', content_base64: Buffer.from('u').toString('base64'), overwrite: true });
    ops.calls++;
  }
  await sleep(500);
  addCounts(total, await attackerCounts(sid));

  console.log(`race: ${ops.calls} host operations in ${RACE_SECONDS} s (${JSON.stringify(ops.status)}); swaps ${JSON.stringify(total.ok)}; refused ${JSON.stringify(total.failed)}`);
  assert.deepEqual(canaryState(), before, `the host canary file changed (owner, mode or content): ${JSON.stringify(total)}`);
  assert.equal(canaryConnections, 0, `the server connected to the host canary socket ${canaryConnections} times`);
  assert.deepEqual(fs.readdirSync(canaryDir).sort(), ['host.sock', 'secret'], 'nothing was written into the host canary dir');
  // The attack really ran: links were swapped over every name the sandbox can write
  // (the kernels' sockets and connection files, the workspace) the whole time.
  const writable = Object.keys(total.ok).filter((n) => n.includes('/ipc/') || n.startsWith('/mnt/data') || n === 'outputs-dir');
  assert.ok(writable.length >= 12, `the attacker swapped too few names: ${JSON.stringify(total)}`);
  // And the host kept working under it: a display output file and a full-output file were
  // written, the JavaScript kernel read its stdin file, bash ran its script.
  for (const step of steps) {
    const key = `${step.language}:${step.code.slice(-12)}:success`;
    assert.ok(ops.status[key] >= 1, `no ${step.language} call "${step.code.slice(0, 40)}" succeeded under the attack: ${JSON.stringify(ops.status)}`);
  }

  // The server and another session still work.
  const other = await callExec(client, { language: 'python', session_id: 'bystander', code: 'print(6*7)' });
  assert.equal(expectStatus(other, 'success', server).stdout, '42\n');
});

test('the run dir is read-only inside: stdin files and scripts cannot be replaced, a FIFO planted at a temporary name blocks nothing', async () => {
  const sid = 'fifo';
  const pid = server.transport.pid;
  assert.ok(pid > 0, 'server pid');
  // What the host used to write by predictable names: <file>.tmp.<server pid>.
  const plant = await callExec(client, {
    language: 'python',
    session_id: sid,
    code:
      'import os\nplanted = 0\n' +
      `for name in ('/run/cellgate/stdin-javascript.tmp.${pid}', '/run/cellgate/ipc/kernel-javascript.json.tmp.${pid}', '/run/cellgate/x'):\n` +
      '    try:\n        os.mkfifo(name)\n        planted += 1\n    except OSError as e:\n        print(name, e.errno)\n' +
      'print(planted)',
  });
  const out = expectStatus(plant, 'success', server).stdout.trim().split('\n');
  assert.ok(out.slice(0, -1).every((line) => line.startsWith('/run/cellgate/ipc/') || line.endsWith(' 30')), `EROFS expected in /run/cellgate: ${out}`);
  // The JavaScript kernel starts and reads its stdin from the run dir, within the timeout.
  const js = await callExec(client, { session_id: sid, language: 'javascript', code: "require('fs').readFileSync(0, 'utf8')", stdin: 'through', timeout: 20 });
  const s = expectStatus(js, 'success', server);
  assert.match(JSON.stringify(s.returnValue ?? s.return_value), /through/, show(js, server));
  const bash = await callExec(client, { session_id: sid, language: 'bash', code: 'touch /run/cellgate/new 2>&1; ls -ld /run/cellgate | cut -c1-10' });
  const b = expectStatus(bash, 'success', server);
  assert.match(b.stdout, /Read-only file system/);
});

test('a state dir path of any length: kernels start and run', async () => {
  let dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-long-'));
  const top = dir;
  while (dir.length < 200) dir = path.join(dir, 'a-rather-long-directory-name');
  fs.mkdirSync(dir, { recursive: true });
  const long = await startServer({ args: ['--state-dir', dir] });
  try {
    for (const language of ['python', 'javascript']) {
      const r = await callExec(long.client, { language, session_id: 'long', code: language === 'python' ? 'print(1+1)' : 'console.log(1+1)' });
      assert.equal(expectStatus(r, 'success', long).stdout, '2\n', `${language} under a ${dir.length}-character state dir`);
    }
  } finally {
    await long.close();
    fs.rmSync(top, { recursive: true, force: true });
  }
});
