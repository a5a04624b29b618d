// Hostile code against the sandbox: network, host files, read-only root, privileges, env, memory and fork bombs.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ownListeners } from './corpus.mjs';
import { REPO_ROOT, ROOTLESS, SANDBOX_UID, callExec, expectStatus, sc, show, startServer } from './lib.mjs';

const SECRET_NAME = 'CELLGATE_TEST_SECRET';
const SECRET_VALUE = 'hunter2';
// The memory bomb stops by itself at this size, so a sandbox without a memory limit fails
// the test instead of taking the host down.
const MEMBOMB_CAP_GIB = Number(process.env.CELLGATE_E2E_MEMBOMB_CAP_GIB || 12);

let server;
let client;

before(async () => {
  server = await startServer({ env: { [SECRET_NAME]: SECRET_VALUE } });
  client = server.client;
});

after(async () => {
  await server?.close();
});

/** Runs a cell that prints one JSON document last; returns [parsed, result]. */
async function runJson(args, opts) {
  const r = await callExec(client, { language: 'python', ...args }, opts);
  const s = expectStatus(r, 'success', server);
  const lines = s.stdout.trim().split('\n');
  let parsed;
  try {
    parsed = JSON.parse(lines.at(-1));
  } catch {
    assert.fail(`cell did not print JSON last: ${show(r, server)}`);
  }
  return [parsed, r];
}

const py = (value) => JSON.stringify(value); // JSON literals are valid Python literals here

test('no network: only lo, no routes, listeners on this machine\'s own addresses unreachable', async () => {
  // Never addresses another host: the targets are listeners this test opens on loopback and
  // on this machine's own interface addresses.
  const listeners = await ownListeners();
  try {
    const targets = listeners.targets;
    const code = `
import json, socket
targets = ${py(targets)}
marks = {}
for host, port in targets:
    try:
        s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, port))
        marks[f'{host}:{port}'] = 'CONNECTED'
        s.close()
    except OSError as e:
        marks[f'{host}:{port}'] = 'BLOCKED ' + type(e).__name__
ifaces = [name for _, name in socket.if_nameindex()]
route = open('/proc/net/route').read().splitlines()[1:]
v6 = [l.split()[-1] for l in open('/proc/net/ipv6_route').read().splitlines()]
print(json.dumps({'marks': marks, 'ifaces': ifaces, 'route': route, 'v6': v6}))
`;
    const [out, r] = await runJson({ code, session_id: 'sess_e2enetwork01', timeout: 60 });
    for (const [host, p] of targets) {
      const mark = out.marks[`${host}:${p}`];
      assert.ok(mark?.startsWith('BLOCKED'), `${host}:${p} reachable from the sandbox: ${show(r, server)}`);
    }
    assert.ok(!sc(r).stdout.includes('CONNECTED'), show(r, server));
    assert.equal(listeners.accepted(), 0, 'a listener of this machine accepted a connection from the sandbox');
    assert.deepEqual(
      out.ifaces.filter((n) => n !== 'lo'),
      [],
      `the sandbox network namespace has interfaces: ${out.ifaces.join(', ')}`,
    );
    assert.deepEqual(out.route, [], 'the sandbox has IPv4 routes');
    // lo's own IPv6 entries (::1, multicast, the reject default) stay in an empty namespace.
    assert.deepEqual(out.v6.filter((dev) => dev !== 'lo'), [], 'the sandbox has IPv6 routes beyond lo');
  } finally {
    await listeners.close();
  }
});

test('host files are not visible: /root, /etc/shadow, /home, the state dir, the repo', async () => {
  const paths = ['/root', '/etc/shadow', '/home', server.stateDir, REPO_ROOT];
  const code = `
import json, os
marks = {}
for p in ${py(paths)}:
    try:
        if os.path.isdir(p):
            marks[p] = 'VISIBLE ' + ','.join(sorted(os.listdir(p))[:20])
        else:
            with open(p, 'rb') as f:
                marks[p] = 'VISIBLE %d bytes' % len(f.read())
    except (FileNotFoundError, PermissionError) as e:
        marks[p] = 'DENIED ' + type(e).__name__
    except OSError as e:
        marks[p] = 'OTHER ' + repr(e)
print(json.dumps(marks))
`;
  const [marks, r] = await runJson({ code, session_id: 'sess_e2ehostfs001' });
  for (const p of paths) {
    assert.ok(marks[p]?.startsWith('DENIED'), `${p} from the sandbox: ${marks[p]} (${show(r, server)})`);
  }
});

test('root filesystem is read-only; /mnt/data and /tmp are writable', async () => {
  const code = `
import errno, json, os
marks = {}
for p in ['/usr/cellgate_e2e_probe', '/etc/cellgate_e2e_probe']:
    try:
        with open(p, 'x') as f:
            f.write('x')
        os.unlink(p)
        marks[p] = 'WROTE'
    except OSError as e:
        marks[p] = 'FAILED ' + errno.errorcode.get(e.errno, str(e.errno))
for d in ['/mnt/data', '/tmp']:
    p = os.path.join(d, 'e2e_probe.txt')
    try:
        with open(p, 'w') as f:
            f.write('probe')
        with open(p) as f:
            marks[d] = 'RW ' + f.read()
        os.unlink(p)
    except OSError as e:
        marks[d] = 'FAILED ' + repr(e)
print(json.dumps(marks))
`;
  const [marks, r] = await runJson({ code, session_id: 'sess_e2erootfs001' });
  const probes = ['/usr/cellgate_e2e_probe', '/etc/cellgate_e2e_probe'];
  for (const p of probes) {
    assert.ok(marks[p]?.startsWith('FAILED'), `${p}: ${marks[p]} (${show(r, server)})`);
  }
  // EROFS (not just EACCES from the unprivileged uid) shows the mount itself is read-only.
  assert.ok(
    probes.some((p) => marks[p] === 'FAILED EROFS'),
    `root filesystem not mounted read-only: ${JSON.stringify(marks)}`,
  );
  assert.equal(marks['/mnt/data'], 'RW probe', show(r, server));
  assert.equal(marks['/tmp'], 'RW probe', show(r, server));
});

test('unprivileged: non-root uid, no capabilities, no_new_privs, seccomp filter', async () => {
  const code = `
import json, os
st = {}
with open('/proc/self/status') as f:
    for line in f:
        k, _, v = line.partition(':')
        st[k] = v.strip()
print(json.dumps({'uid': os.getuid(), 'euid': os.geteuid(), 'uid_map': open('/proc/self/uid_map').read().split(),
                  'CapEff': st.get('CapEff'), 'CapPrm': st.get('CapPrm'), 'CapAmb': st.get('CapAmb'),
                  'NoNewPrivs': st.get('NoNewPrivs'), 'Seccomp': st.get('Seccomp')}))
`;
  const [id, r] = await runJson({ code, session_id: 'sess_e2eprivs0001' });
  const ctx = `${JSON.stringify(id)}\n${show(r, server)}`;
  if (ROOTLESS) {
    // The user namespace's root, mapped onto this (unprivileged) user and nothing else.
    assert.deepEqual([id.uid, id.euid, id.uid_map], [0, 0, ['0', String(process.getuid()), '1']], ctx);
    assert.notEqual(process.getuid(), 0);
  } else {
    assert.notEqual(id.uid, 0, ctx);
    assert.notEqual(id.euid, 0, ctx);
  }
  assert.equal(id.CapEff, '0000000000000000', ctx);
  assert.equal(id.CapPrm, '0000000000000000', ctx);
  assert.equal(id.CapAmb, '0000000000000000', ctx);
  assert.equal(id.NoNewPrivs, '1', ctx);
  assert.equal(id.Seccomp, '2', ctx);
});

test('seccomp denies what the design names (keyctl, io_uring, userfaultfd, user namespaces, AF_ALG, AF_VSOCK)', async () => {
  // Every probe must fail; a success means the profile lets it through.
  const code = `
import ctypes, json, os, platform, socket
NR = {'x86_64': {'keyctl': 250, 'io_uring_setup': 425, 'userfaultfd': 323, 'unshare': 272},
      'aarch64': {'keyctl': 219, 'io_uring_setup': 425, 'userfaultfd': 282, 'unshare': 97}}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
marks = {}
nr = NR.get(platform.machine())
if nr:
    params = ctypes.create_string_buffer(120)
    probes = {
        'keyctl': (nr['keyctl'], ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(1)),
        'io_uring_setup': (nr['io_uring_setup'], ctypes.c_long(1), params),
        'userfaultfd': (nr['userfaultfd'], ctypes.c_long(0o2000000 | 1)),
    }
    for name, args in probes.items():
        ret = libc.syscall(*args)
        marks[name] = 'ALLOWED' if ret >= 0 else 'DENIED ' + os.strerror(ctypes.get_errno())
    # unshare(CLONE_NEWUSER) always fails in a threaded process, so probe from a fork.
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.syscall(nr['unshare'], ctypes.c_long(0x10000000)) == 0 else 1)
    _, wstatus = os.waitpid(pid, 0)
    marks['unshare_newuser'] = 'ALLOWED' if os.waitstatus_to_exitcode(wstatus) == 0 else 'DENIED'
for name, fam, typ in [('AF_ALG', 38, socket.SOCK_SEQPACKET), ('AF_VSOCK', 40, socket.SOCK_STREAM)]:
    try:
        socket.socket(fam, typ).close()
        marks[name] = 'ALLOWED'
    except OSError as e:
        marks[name] = 'DENIED ' + type(e).__name__
print(json.dumps({'machine': platform.machine(), 'marks': marks}))
`;
  const [out, r] = await runJson({ code, session_id: 'sess_e2eseccomp01' });
  for (const [name, mark] of Object.entries(out.marks)) {
    assert.ok(mark.startsWith('DENIED'), `${name} allowed in the sandbox (${out.machine}): ${show(r, server)}`);
  }
});

test('no host secrets in the environment', async () => {
  const code = `
import glob, json, os
leaks = []
for p in glob.glob('/proc/[0-9]*/environ'):
    try:
        with open(p, 'rb') as f:
            if b'${SECRET_VALUE}' in f.read():
                leaks.append(p)
    except OSError:
        pass
print(json.dumps({'env': dict(os.environ), 'leaks': leaks}))
`;
  assert.equal(process.env[SECRET_NAME], undefined, `unset ${SECRET_NAME} in the test's own env`);
  const [out, r] = await runJson({ code, session_id: 'sess_e2eenviron01' });
  assert.ok(!(SECRET_NAME in out.env), `${SECRET_NAME} reached the sandbox: ${show(r, server)}`);
  for (const [k, v] of Object.entries(out.env)) {
    assert.ok(!v.includes(SECRET_VALUE), `env ${k} carries the host secret`);
  }
  assert.deepEqual(out.leaks, [], 'a sandboxed process environment carries the host secret');
});

test('memory bomb ends in an execution_error about memory; the server keeps serving', async () => {
  const sid = 'sess_e2ememory001';
  const chunks = Math.floor((MEMBOMB_CAP_GIB * 1024) / 50);
  const code = `a = []\nfor _ in range(${chunks}):\n    a.append(bytearray(50*1024*1024))\nprint('UNLIMITED', len(a))`;
  const r = await callExec(client, { language: 'python', code, session_id: sid, timeout: 60 }, { timeoutMs: 180000 });
  const s = sc(r);
  assert.ok(!s.stdout.includes('UNLIMITED'), `no memory limit: ${MEMBOMB_CAP_GIB} GiB allocated (${show(r, server)})`);
  expectStatus(r, 'execution_error', server);
  assert.match(`${s.stderr}\n${s.error_message ?? ''}`, /MemoryError|out of memory/i, show(r, server));

  let ok = await callExec(client, { language: 'python', code: "print('ok')", session_id: sid });
  if (ok.structuredContent?.status !== 'success') {
    ok = await callExec(client, { language: 'python', code: "print('ok')", session_id: 'sess_e2ememory002' });
  }
  assert.equal(expectStatus(ok, 'success', server).stdout, 'ok\n');
});

test('fork bomb is contained; a new session still runs', async () => {
  const code = 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass';
  const r = await callExec(
    client,
    { language: 'python', code, session_id: 'sess_e2eforkbomb1', timeout: 5 },
    { timeoutMs: 180000 },
  );
  const s = sc(r);
  assert.ok(['timeout', 'execution_error'].includes(s.status), show(r, server));
  assert.equal(r.isError, true);

  const ok = await callExec(client, { language: 'python', code: "print('ok')", session_id: 'sess_e2eforkbomb2' });
  assert.equal(expectStatus(ok, 'success', server).stdout, 'ok\n');
  await client.ping({ timeout: 10000 });
});

test('javascript and bash are held the same way: no network, read-only kernels and root, no capabilities', async () => {
  const sid = 'sess_e2ehostjsbash';
  const listeners = await ownListeners();
  const [lhost, lport] = listeners.targets[0]; // 127.0.0.1: this machine's own listener
  const js = await callExec(client, {
    language: 'javascript',
    session_id: sid,
    code: `
const fs = require('fs');
const net = require('net');
const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'WROTE'; } catch (e) { return 'FAILED ' + e.code; } };
const connect = (host, port) => new Promise((done) => {
  const s = net.connect({ host, port, timeout: 3000 });
  s.on('connect', () => { s.destroy(); done('CONNECTED'); });
  s.on('timeout', () => { s.destroy(); done('TIMEOUT'); });
  s.on('error', (e) => done('FAILED ' + e.code));
});
const marks = {
  kernels: tryWrite('/opt/cellgate/kernels/javascript/probe'),
  usr: tryWrite('/usr/probe'),
  shadow: (() => { try { fs.readFileSync('/etc/shadow'); return 'READ'; } catch (e) { return 'FAILED ' + e.code; } })(),
  net: await connect(${JSON.stringify(lhost)}, ${lport}),
  uid: process.getuid(),
};
JSON.stringify(marks)`,
  });
  const jm = JSON.parse(expectStatus(js, 'success', server).returnValue);
  assert.equal(jm.kernels, 'FAILED EROFS', JSON.stringify(jm));
  assert.equal(jm.usr, 'FAILED EROFS', JSON.stringify(jm));
  assert.ok(jm.shadow.startsWith('FAILED'), JSON.stringify(jm));
  assert.ok(jm.net.startsWith('FAILED') || jm.net === 'TIMEOUT', JSON.stringify(jm));
  assert.equal(jm.uid, SANDBOX_UID);

  const sh = await callExec(client, {
    language: 'bash',
    session_id: sid,
    code: `(timeout 5 bash -c 'echo > /dev/tcp/${lhost}/${lport}') 2>/dev/null && echo net=OPEN || echo net=CLOSED
touch /opt/cellgate/kernels/probe 2>/dev/null && echo kernels=WROTE || echo kernels=READONLY
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t ' ' '
echo "secret=\${${SECRET_NAME}:-absent}"`,
  });
  const out = expectStatus(sh, 'success', server).stdout;
  assert.match(out, /net=CLOSED/);
  assert.match(out, /kernels=READONLY/);
  assert.match(out, /CapEff: 0000000000000000/);
  assert.match(out, /NoNewPrivs: 1/);
  assert.match(out, /Seccomp: 2/);
  assert.match(out, /secret=absent/);
  assert.equal(listeners.accepted(), 0, 'the host listener accepted a connection from the sandbox');
  await listeners.close();
  await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
});
