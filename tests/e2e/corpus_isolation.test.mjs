// Hostile corpus, isolation: network, environment, host files, masked /proc and /sys, pid
// namespace, privileges, denied syscalls and socket families, 32-bit ABIs, setuid, planted
// start-up files, one session against another, and signals against the sandbox's own processes.
// Every case runs through the MCP tools in a real sandbox; a second session must keep its
// state after every group. Addresses used: only this machine's own.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { REPO_ROOT, callExec, sc, show } from './lib.mjs';
import {
  CANARY_NAME, CANARY_VALUE, caseTable, ownListeners, py, runJson, secondSession, startCorpusServer,
} from './corpus.mjs';

const kase = caseTable('corpus_isolation');
let server;
let bystander;

before(async () => {
  server = await startCorpusServer({ name: 'corpus-isolation', args: ['--http-listen', '127.0.0.1:0', '--interrupt-grace-ms', '1000'] });
  bystander = secondSession(server);
  await bystander.check('at start');
});

after(async () => {
  await server?.close();
});

const run = (args, timeoutMs) => callExec(server.client, args, { timeoutMs });
const ok = (r) => {
  assert.equal(sc(r).status, 'success', show(r, server));
  return sc(r);
};

kase('network: only lo, no routes, own listeners unreachable (python, javascript, bash)',
  'ifaces [lo]; no IPv4 route; IPv6 routes only lo-local; 0 connections accepted',
  async () => {
    const listeners = await ownListeners();
    try {
      // The download listener of this server is one of this machine's own listeners too.
      const dl = server.stderrText().match(/http:\/\/127\.0\.0\.1:(\d+)/);
      const targets = [...listeners.targets, ...(dl ? [['127.0.0.1', Number(dl[1])]] : [])];
      const out = await runJson(server, { session_id: 'sess_corpusnet0001', timeout: 90, code: `
import json, os, socket
marks = {}
for host, port in ${py(targets)}:
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    try:
        s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(2); s.connect((host, port))
        marks[f'{host}:{port}'] = 'CONNECTED'; s.close()
    except OSError as e:
        marks[f'{host}:{port}'] = 'BLOCKED ' + (os.strerror(e.errno) if e.errno else type(e).__name__)
route = open('/proc/net/route').read().splitlines()[1:]
v6 = [l.split() for l in open('/proc/net/ipv6_route').read().splitlines()]
print(json.dumps({'marks': marks, 'sysnet': sorted(os.listdir('/sys/class/net')),
                  'ifaces': [n for _, n in socket.if_nameindex()], 'route': route, 'v6': v6}))
` });
      for (const [k, v] of Object.entries(out.marks)) assert.ok(v.startsWith('BLOCKED'), `python reached ${k}: ${v}`);
      assert.deepEqual(out.sysnet, ['lo'], '/sys/class/net');
      assert.deepEqual(out.ifaces, ['lo'], 'if_nameindex');
      assert.deepEqual(out.route, [], '/proc/net/route has IPv4 routes');
      // An empty network namespace with lo up keeps lo's own IPv6 entries (::1, multicast and
      // the reject default route, all on lo); a route through any other device is a leak.
      const v6Other = out.v6.filter((f) => f.at(-1) !== 'lo');
      assert.deepEqual(v6Other, [], '/proc/net/ipv6_route has routes beyond lo');

      const js = await run({ language: 'javascript', session_id: 'sess_corpusnet0001', timeout: 90, code: `
const net = require('net');
const targets = ${JSON.stringify(targets)};
const one = ([host, port]) => new Promise((done) => {
  const s = net.connect({ host, port, timeout: 2000 });
  s.on('connect', () => { s.destroy(); done('CONNECTED'); });
  s.on('timeout', () => { s.destroy(); done('BLOCKED timeout'); });
  s.on('error', (e) => done('BLOCKED ' + e.code));
});
JSON.stringify(await Promise.all(targets.map(one)))` }, 120000);
      const jsMarks = JSON.parse(ok(js).returnValue);
      jsMarks.forEach((m, i) => assert.ok(m.startsWith('BLOCKED'), `javascript reached ${targets[i].join(':')}: ${m}`));

      const bashLines = targets.map(([h, p]) => `(timeout 3 bash -c 'echo > /dev/tcp/${h}/${p}') 2>/dev/null && echo "OPEN ${h}:${p}" || echo "CLOSED ${h}:${p}"`);
      const sh = ok(await run({ language: 'bash', session_id: 'sess_corpusnet0001', timeout: 90, code: bashLines.join('\n') }, 120000));
      assert.ok(!sh.stdout.includes('OPEN'), `bash reached a listener: ${sh.stdout}`);
      assert.equal(listeners.accepted(), 0, 'a listener of this machine accepted a connection from the sandbox');
      await server.call('close_session', { session_id: 'sess_corpusnet0001' });
      return `${targets.length} own listeners (${targets.map((t) => t[0]).join(', ')}) blocked in 3 languages; ifaces ${out.sysnet}; ${out.v6.length} lo-only v6 entries; ${await bystander.check('after network')}`;
    } finally {
      await listeners.close();
    }
  });

kase('no host secret in any environment (python, /proc/*/environ, javascript, bash)',
  'canary absent everywhere', async () => {
    const sid = 'sess_corpusenv0001';
    const out = await runJson(server, { session_id: sid, code: `
import glob, json, os
leaks = [k for k, v in os.environ.items() if ${py(CANARY_VALUE)} in v or k == ${py(CANARY_NAME)}]
for p in glob.glob('/proc/[0-9]*/environ') + ['/proc/1/environ']:
    try:
        if ${py(CANARY_VALUE)}.encode() in open(p, 'rb').read(): leaks.append(p)
    except OSError:
        pass
print(json.dumps({'leaks': leaks, 'keys': sorted(os.environ)}))
` });
    assert.deepEqual(out.leaks, [], 'python sees the canary');
    const js = ok(await run({ language: 'javascript', session_id: sid, code: 'JSON.stringify(process.env)' }));
    assert.ok(!js.returnValue.includes(CANARY_VALUE) && !js.returnValue.includes(CANARY_NAME), 'javascript sees the canary');
    const sh = ok(await run({ language: 'bash', session_id: sid, code: `env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ${CANARY_VALUE} || true` }));
    assert.ok(!sh.stdout.includes(CANARY_VALUE) && !sh.stdout.includes(CANARY_NAME), `bash sees the canary: ${sh.stdout}`);
    await server.call('close_session', { session_id: sid });
    return `env keys ${out.keys.join(',')}; ${await bystander.check()}`;
  });

kase('host files absent: /root, /home, state dir, repo, host /etc/shadow content',
  'all absent or denied; no line of the host shadow file visible', async () => {
    let shadowLines = [];
    try {
      shadowLines = fs.readFileSync('/etc/shadow', 'utf8').split('\n').filter((l) => /^[^:]+:[^:*!]{8,}/.test(l));
    } catch {
      // not root: nothing to compare
    }
    const paths = ['/root', '/home', server.stateDir, REPO_ROOT, '/work', '/var/lib/cellgate', '/etc/shadow', '/etc/sudoers', '/proc/1/root/root'];
    const out = await runJson(server, { session_id: 'sess_corpushost001', code: `
import json, os
marks = {}
for p in ${py(paths)}:
    try:
        marks[p] = 'VISIBLE ' + (','.join(sorted(os.listdir(p))[:10]) if os.path.isdir(p) else str(len(open(p, 'rb').read())))
    except OSError as e:
        marks[p] = 'ABSENT ' + type(e).__name__
try:
    shadow = open('/etc/shadow').read()
except OSError:
    shadow = ''
print(json.dumps({'marks': marks, 'shadow': shadow}))
` });
    for (const p of paths) assert.ok(out.marks[p].startsWith('ABSENT'), `${p}: ${out.marks[p]}`);
    for (const l of shadowLines) assert.ok(!out.shadow.includes(l.split(':').slice(0, 2).join(':')), 'host shadow entry visible');
    await server.call('close_session', { session_id: 'sess_corpushost001' });
    return `${paths.length} paths absent (${[...new Set(Object.values(out.marks).map((m) => m.split(' ')[1]))].join('/')}); ${await bystander.check()}`;
  });

kase('masked /proc and /sys; read-only /proc/sys and /sys',
  'kcore/keys/timer_list/sched_debug/acpi/firmware empty or absent; writes EROFS/EACCES; kallsyms zeroed',
  async () => {
    const out = await runJson(server, { session_id: 'sess_corpusproc001', code: `
import json, os
marks = {}
for p in ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/proc/sched_debug', '/proc/latency_stats', '/proc/timer_stats']:
    try:
        with open(p, 'rb') as f: marks[p] = 'READ %d' % len(f.read(4096))
    except OSError as e:
        marks[p] = 'NONE ' + type(e).__name__
for d in ['/proc/acpi', '/proc/scsi', '/proc/asound', '/sys/firmware', '/sys/devices/virtual/powercap']:
    try: marks[d] = 'LIST %d' % len(os.listdir(d))
    except OSError as e: marks[d] = 'NONE ' + type(e).__name__
for p, data in [('/proc/sysrq-trigger', 'h'), ('/proc/sys/kernel/hostname', 'x'), ('/proc/sys/vm/drop_caches', '3'),
                ('/sys/kernel/mm/transparent_hugepage/enabled', 'never'), ('/proc/sys/kernel/core_pattern', '|/tmp/x')]:
    try:
        with open(p, 'w') as f: f.write(data)
        marks['w ' + p] = 'WROTE'
    except OSError as e:
        marks['w ' + p] = 'DENIED ' + type(e).__name__
try:
    nonzero = [l for l in open('/proc/kallsyms') if not l.startswith('0000000000000000')][:1]
    marks['kallsyms'] = 'ADDRESSES' if nonzero else 'ZEROED'
except OSError as e:
    marks['kallsyms'] = 'NONE ' + type(e).__name__
print(json.dumps(marks))
` });
    for (const [k, v] of Object.entries(out)) {
      if (k.startsWith('w ')) assert.ok(v.startsWith('DENIED'), `${k}: ${v}`);
      else if (k === 'kallsyms') assert.notEqual(v, 'ADDRESSES', 'kernel addresses visible');
      else assert.ok(/^(NONE|READ 0$|LIST 0$)/.test(v), `${k} not masked: ${v}`);
    }
    await server.call('close_session', { session_id: 'sess_corpusproc001' });
    return `${Object.keys(out).length} probes masked/denied; ${await bystander.check()}`;
  });

kase('/proc shows only the sandbox\'s own processes', 'pid 1 is catatonit; no host or server pid; < 10 pids', async () => {
  const out = await runJson(server, { session_id: 'sess_corpuspids001', code: `
import json, os
procs = {}
for p in os.listdir('/proc'):
    if p.isdigit():
        try: procs[p] = open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ').decode()[:80]
        except OSError: pass
print(json.dumps(procs))
` });
  const cmds = Object.values(out);
  assert.match(out['1'] ?? '', /catatonit/, `pid 1: ${out['1']}`);
  assert.ok(Object.keys(out).length < 10, `too many pids: ${JSON.stringify(out)}`);
  // The sandbox's own programs only: never the server, runc, or the host's init and daemons.
  const argv0 = (c) => c.split(' ')[0].split('/').at(-1);
  assert.ok(!cmds.some((c) => /^(cellgate|runc|crun|sshd|systemd|process_api|containerd|dockerd)$/.test(argv0(c))), `host processes visible: ${JSON.stringify(out)}`);
  assert.ok(!(String(server.pid) in out && /cellgate/.test(out[String(server.pid)])), 'server pid visible');
  await server.call('close_session', { session_id: 'sess_corpuspids001' });
  return `${Object.keys(out).length} pids: ${Object.entries(out).map(([p, c]) => `${p}=${c.split(' ')[0].split('/').at(-1)}`).join(' ')}; ${await bystander.check()}`;
});

// Every probe must fail; for those the seccomp profile denies by name, the errno must be
// seccomp's (EPERM/ENOSYS), not the kernel's verdict on bad arguments.
const SYSCALL_PROBES = `
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
buf = ctypes.create_string_buffer(256)
def call(nr, *args):
    ret = libc.syscall(L(nr), *[a if isinstance(a, ctypes.Array) else L(a) for a in args])
    return 'ALLOWED %d' % ret if ret >= 0 else 'DENIED ' + errno.errorcode.get(ctypes.get_errno(), '?')
def in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try: os.write(w, fn().encode())
        finally: os._exit(0)
    os.close(w)
    data = os.read(r, 200).decode(); os.close(r)
    _, st = os.waitpid(pid, 0)
    return data or ('KILLED signal %d' % os.WTERMSIG(st) if os.WIFSIGNALED(st) else 'EXIT %d' % os.waitstatus_to_exitcode(st))
m = {}
ctypes.memmove(buf, ctypes.byref(ctypes.c_uint32(128)), 4)   # perf_event_attr.size
m['mount'] = call(165, ctypes.create_string_buffer(b'none'), ctypes.create_string_buffer(b'/tmp'), ctypes.create_string_buffer(b'tmpfs'), 0, 0)
m['umount2'] = call(166, ctypes.create_string_buffer(b'/tmp'), 2)
m['unshare(NEWUSER)'] = in_child(lambda: call(272, 0x10000000))
m['unshare(NEWNS)'] = in_child(lambda: call(272, 0x00020000))
m['unshare(NEWNET)'] = in_child(lambda: call(272, 0x40000000))
fd = os.open('/proc/self/ns/net', os.O_RDONLY)
m['setns'] = call(308, fd, 0); os.close(fd)
m['chroot'] = call(161, ctypes.create_string_buffer(b'/tmp'))
m['pivot_root'] = call(155, ctypes.create_string_buffer(b'/tmp'), ctypes.create_string_buffer(b'/tmp'))
m['init_module'] = call(175, buf, 64, ctypes.create_string_buffer(b''))
fd = os.open('/dev/null', os.O_RDONLY)
m['finit_module'] = call(313, fd, ctypes.create_string_buffer(b''), 0); os.close(fd)
m['delete_module'] = call(176, ctypes.create_string_buffer(b'loop'), 0o4000)
m['kexec_load'] = call(246, 0, 0, 0, 0)
m['kexec_file_load'] = call(320, -1, -1, 0, ctypes.create_string_buffer(b''), 0)
m['reboot(CAD_OFF)'] = call(169, 0xfee1dead, 672274793, 0)
m['ptrace(ATTACH, 1)'] = call(101, 16, 1, 0, 0)
m['ptrace(SEIZE, 1)'] = call(101, 0x4206, 1, 0, 0)
m['io_uring_setup'] = call(425, 1, buf)
m['bpf'] = call(321, 0, buf, 72)
m['perf_event_open'] = call(298, buf, 0, -1, -1, 0)
m['userfaultfd'] = call(323, 0o2000000 | 0o4000)
m['keyctl'] = call(250, 0, -3, 1)
m['add_key'] = call(248, ctypes.create_string_buffer(b'user'), ctypes.create_string_buffer(b'k'), buf, 1, -3)
m['open_by_handle_at'] = call(304, -100, buf, 0)
m['swapon'] = call(167, ctypes.create_string_buffer(b'/tmp/x'), 0)
m['settimeofday'] = call(164, buf, 0)
m['sethostname'] = call(170, ctypes.create_string_buffer(b'evil'), 4)
m['fsopen'] = call(430, ctypes.create_string_buffer(b'tmpfs'), 0)
m['open_tree'] = call(428, -100, ctypes.create_string_buffer(b'/'), 1)
m['clone3'] = call(435, buf, 88)
m['setuid(0)'] = call(105, 0)
m['setgid(0)'] = call(106, 0)
m['setresuid(0,0,0)'] = call(117, 0, 0, 0)
m['x32 getpid'] = in_child(lambda: call(0x40000000 | 39))
for name, fam, typ, proto in [('AF_ALG', 38, socket.SOCK_SEQPACKET, 0), ('AF_VSOCK', 40, socket.SOCK_STREAM, 0),
                              ('AF_PACKET', 17, socket.SOCK_RAW, 0x0300), ('AF_INET raw', 2, socket.SOCK_RAW, 1)]:
    try:
        socket.socket(fam, typ, proto).close()
        m['socket ' + name] = 'ALLOWED'
    except OSError as e:
        m['socket ' + name] = 'DENIED ' + errno.errorcode.get(e.errno, '?')
print(json.dumps(m))
`;
const SECCOMP_NAMED = ['io_uring_setup', 'bpf', 'perf_event_open', 'userfaultfd', 'keyctl', 'add_key', 'socket AF_ALG', 'socket AF_VSOCK', 'clone3'];

kase('mount, unshare, setns, chroot, pivot_root, modules, kexec, reboot, ptrace(1), io_uring, bpf, perf, userfaultfd, keyctl, AF_ALG, AF_VSOCK, setuid(0), x32',
  'every probe DENIED (seccomp-named ones EPERM/ENOSYS); x32 killed or ENOSYS', async () => {
    const m = await runJson(server, { session_id: 'sess_corpussys0001', code: SYSCALL_PROBES });
    for (const [name, v] of Object.entries(m)) {
      assert.ok(/^(DENIED|KILLED)/.test(v), `${name}: ${v}`);
      if (SECCOMP_NAMED.includes(name)) assert.match(v, /EPERM|ENOSYS|EAFNOSUPPORT|EINVAL/, `${name}: ${v}`);
    }
    const counts = {};
    for (const v of Object.values(m)) counts[v] = (counts[v] ?? 0) + 1;
    const odd = Object.entries(m).filter(([, v]) => v !== 'DENIED EPERM').map(([k, v]) => `${k}=${v}`);
    return `${Object.keys(m).length} probes: ${Object.entries(counts).map(([k, n]) => `${n}×${k}`).join(', ')} (${odd.join(', ')}); ${await bystander.check()}`;
  });

kase('32-bit syscalls: int 0x80 from a compiled C program', 'process killed by SIGSYS (or the call fails); never returns the pid', async () => {
  const sh = await run({ language: 'bash', session_id: 'sess_corpussys0001', timeout: 120, code: `
cat > /tmp/int80.c <<'EOF'
#include <stdio.h>
#include <unistd.h>
int main (void) {
    long ret;
    __asm__ volatile ("int $0x80" : "=a" (ret) : "a" (20L) : "memory");   /* i386 getpid */
    printf ("INT80 returned %ld (pid %d)\\n", ret, (int) getpid ());
    return ret == getpid () ? 0 : 3;
}
EOF
gcc -O0 -o /tmp/int80 /tmp/int80.c || exit 99
/tmp/int80; echo "status=$?"` }, 180000);
  const s = sc(sh);
  assert.notEqual(s.exit_code, 99, `gcc failed: ${show(sh, server)}`);
  const status = Number(s.stdout.match(/status=(\d+)/)?.[1]);
  assert.ok(!/INT80 returned \d+ \(pid/.test(s.stdout) || status === 3, `int 0x80 ran: ${s.stdout}`);
  assert.notEqual(status, 0, `int 0x80 getpid succeeded: ${s.stdout}`);
  await server.call('close_session', { session_id: 'sess_corpussys0001' });
  return `status=${status} (${status === 159 ? 'SIGSYS' : status > 128 ? `signal ${status - 128}` : 'failed'}); ${await bystander.check()}`;
});

kase('setuid binaries do not raise privileges', 'euid never 0 in any setuid binary; /usr mounted nosuid', async () => {
  const out = await runJson(server, { session_id: 'sess_corpussuid001', timeout: 60, code: `
import json, os, subprocess, time
found = subprocess.run(['find', '/usr', '-xdev', '-perm', '-4000', '-type', 'f'], capture_output=True, text=True).stdout.split()
euids = {}
for b in found[:12]:
    try:
        p = subprocess.Popen([b], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        euids[b] = ['not executable: ' + type(e).__name__]
        continue
    seen = set()
    for _ in range(20):
        try:
            for line in open(f'/proc/{p.pid}/status'):
                if line.startswith('Uid:'): seen.add(line.split()[2])
        except OSError:
            pass
        if p.poll() is not None: break
        time.sleep(0.01)
    p.kill(); p.wait()
    euids[b] = sorted(seen)
usr = [l.split()[5] for l in open('/proc/self/mountinfo') if l.split()[4] == '/usr']
print(json.dumps({'euids': euids, 'usr': usr}))
` });
  for (const [b, e] of Object.entries(out.euids)) assert.ok(!e.includes('0'), `${b} ran with euid 0`);
  assert.ok(out.usr.every((o) => o.split(',').includes('nosuid')), `/usr options: ${out.usr}`);
  await server.call('close_session', { session_id: 'sess_corpussuid001' });
  return `${Object.keys(out.euids).length} setuid binaries, euids ${[...new Set(Object.values(out.euids).flat())].join(',')}; /usr ${out.usr}; ${await bystander.check()}`;
});

const PLANTS = ['/etc/profile', '/etc/bash.bashrc', '/etc/passwd', '/usr/lib/python3/dist-packages/sitecustomize.py',
  '/usr/lib/python3.11/sitecustomize.py', '/opt/cellgate/kernels/python/kernel.json', '/run/cellgate/kernel-python.json',
  '/tmp/.bashrc', '/tmp/.profile', '/tmp/.bash_profile', '/tmp/.ipython/profile_default/startup/00-corpus.py',
  '/tmp/.local/lib/python3.11/site-packages/usercustomize.py', '/tmp/.local/lib/python3.11/site-packages/corpus.pth',
  '/tmp/corpus-persist', '/dev/shm/corpus-persist', '/tmp/.node_repl_history'];

kase('writes to system paths and start-up files; nothing planted survives into another session',
  'system paths EROFS/EACCES; /tmp plants vanish; a new session, a one-shot run and a reopened id run clean', async () => {
    const a = 'sess_corpusplant01';
    const out = await runJson(server, { session_id: a, code: `
import json, os
marks = {}
payload = {'py': "import os; open('/mnt/data/PWNED-by-start-up', 'w').write('x'); os.environ['CORPUS_PLANTED'] = '1'\\n",
           'sh': "echo PLANTED; export CORPUS_PLANTED=1; touch /mnt/data/PWNED-by-start-up\\n",
           'pth': "import os; os.environ['CORPUS_PLANTED'] = '1'\\n"}
for p in ${py(PLANTS)}:
    kind = 'pth' if p.endswith('.pth') else 'py' if p.endswith('.py') else 'sh'
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'a') as f: f.write(payload[kind])
        marks[p] = 'WROTE'
    except OSError as e:
        marks[p] = 'DENIED ' + type(e).__name__
print(json.dumps(marks))
` });
    const wrote = Object.entries(out).filter(([, v]) => v === 'WROTE').map(([k]) => k);
    // Another session, a one-shot run and the same id after close must all start clean.
    const probe = `
import json, os, subprocess
seen = {p: os.path.exists(p) for p in ${py(PLANTS.filter((p) => /^\/(tmp|dev\/shm)\//.test(p)))}}
sh = subprocess.run(['bash', '-lic', 'echo $CORPUS_PLANTED'], capture_output=True, text=True, timeout=20)
print(json.dumps({'seen': [p for p, v in seen.items() if v], 'env': os.environ.get('CORPUS_PLANTED'),
                  'pwned': os.path.exists('/mnt/data/PWNED-by-start-up'), 'sh': sh.stdout + sh.stderr}))
`;
    await server.call('close_session', { session_id: a });
    const results = {
      other: await runJson(server, { session_id: 'sess_corpusplant02', code: probe }),
      oneshot: await runJson(server, { code: probe }),
      reopened: await runJson(server, { session_id: a, code: probe }),
    };
    for (const [where, r] of Object.entries(results)) {
      assert.deepEqual(r.seen, [], `${where}: planted files visible`);
      assert.equal(r.env, null, `${where}: a planted start-up file ran`);
      assert.ok(!/PLANTED|1\n/.test(r.sh), `${where}: bash ran a planted start-up file: ${r.sh}`);
      if (where !== 'reopened') assert.equal(r.pwned, false, `${where}: a planted start-up file wrote to the workspace`);
    }
    const js = ok(await run({ language: 'javascript', session_id: 'sess_corpusplant02', code: "require('fs').existsSync('/tmp/corpus-persist')" }));
    assert.equal(String(js.returnValue), 'false');
    for (const sid of [a, 'sess_corpusplant02']) await server.call('close_session', { session_id: sid });
    // /run/cellgate is the host's directory for the kernels' connection files and sockets:
    // the sandbox must not write there (issue 9, point 1).
    for (const p of wrote) assert.ok(/^\/(tmp|dev\/shm)\//.test(p), `planted outside the sandbox's scratch space: ${p}`);
    return `wrote only ${wrote.length} scratch paths; ${PLANTS.length - wrote.length} system paths denied; clean in other/one-shot/reopened; ${await bystander.check()}`;
  });

kase('one session cannot reach another\'s files, sockets, ipc or downloads',
  'B sees none of A\'s workspace, /tmp, unix or abstract sockets; A\'s token opens nothing of B and vice versa', async () => {
    const a = 'sess_corpuscrossa1';
    const b = 'sess_corpuscrossb1';
    const setup = await run({ language: 'bash', session_id: a, code: `
echo secret-of-A > /mnt/data/a-secret.txt
echo tmp-of-A > /tmp/a-tmp.txt
nohup python3 -c "
import socket, time
s1 = socket.socket(socket.AF_UNIX); s1.bind('/tmp/a.sock'); s1.listen()
s2 = socket.socket(socket.AF_UNIX); s2.bind('/mnt/data/a.sock'); s2.listen()
s3 = socket.socket(socket.AF_UNIX); s3.bind('\\0corpus-a'); s3.listen()
s4 = socket.socket(); s4.bind(('127.0.0.1', 47123)); s4.listen()
time.sleep(120)" >/dev/null 2>&1 &
sleep 1; ls /mnt/data /tmp` });
    ok(setup);
    const aWorkspace = JSON.stringify(server.stateDir);
    const out = await runJson(server, { session_id: b, code: `
import glob, json, os, socket
m = {}
m['files'] = [p for p in glob.glob('/mnt/data/*') + glob.glob('/tmp/*') + glob.glob('/run/cellgate/*') if 'a-' in p or 'a.sock' in p]
def conn(addr, fam=socket.AF_UNIX):
    s = socket.socket(fam); s.settimeout(2)
    try: s.connect(addr); return 'CONNECTED'
    except OSError as e: return 'BLOCKED ' + type(e).__name__
    finally: s.close()
m['abstract'] = conn('\\0corpus-a')
m['tmp.sock'] = conn('/tmp/a.sock')
m['ws.sock'] = conn('/mnt/data/a.sock')
m['tcp'] = conn(('127.0.0.1', 47123), socket.AF_INET)
m['ipc'] = sorted(os.listdir('/run/cellgate'))
m['statedir'] = os.path.exists(${aWorkspace})
print(json.dumps(m))
` });
    assert.deepEqual(out.files, [], `B sees A's files: ${out.files}`);
    for (const k of ['abstract', 'tmp.sock', 'ws.sock', 'tcp']) assert.ok(out[k].startsWith('BLOCKED'), `${k}: ${out[k]}`);
    assert.equal(out.statedir, false);
    assert.ok(!out.ipc.some((n) => /javascript/.test(n)), `B's /run/cellgate holds another kernel's files: ${out.ipc}`);
    // Downloads: each session's token opens only its own files.
    ok(await run({ language: 'bash', session_id: b, code: 'echo b-file > /mnt/data/b.txt' }));
    const la = sc(await server.call('list_artifacts', { session_id: a })).artifacts;
    const lb = sc(await server.call('list_artifacts', { session_id: b })).artifacts;
    const ua = new URL(la.find((x) => x.filename === 'a-secret.txt').download_url);
    const ub = new URL(lb.find((x) => x.filename === 'b.txt').download_url);
    const tokA = ua.searchParams.get('token');
    const tokB = ub.searchParams.get('token');
    const codes = {};
    for (const [label, url] of [
      ['A file with B token', `${ua.origin}/files/${a}/a-secret.txt?token=${tokB}`],
      ['B file with A token', `${ua.origin}/files/${b}/b.txt?token=${tokA}`],
      ['A path under B id, A token', `${ua.origin}/files/${b}/a-secret.txt?token=${tokA}`],
      ['traversal to A from B', `${ua.origin}/files/${b}/..%2F${a}%2Fa-secret.txt?token=${tokB}`],
      ['traversal raw', `${ua.origin}/files/${b}/../${a}/a-secret.txt?token=${tokB}`],
    ]) {
      const res = await fetch(url);
      const body = await res.text();
      codes[label] = res.status;
      assert.equal(res.status, 404, `${label}: ${res.status}`);
      assert.ok(!body.includes('secret-of-A'), label);
    }
    assert.equal((await fetch(ua)).status, 200, 'A downloads its own file');
    for (const sid of [a, b]) await server.call('close_session', { session_id: sid });
    return `B saw 0 files of A; 4 socket paths blocked; 5 cross downloads 404; ${await bystander.check()}`;
  });

/**
 * After a call that killed the session's kernels (or its init): the next call in the session
 * either runs its code or says it did not run (never that the code ran and died: issue 9,
 * point 9), and the call after it succeeds. Returns a note.
 */
async function recovers(sid, label) {
  const first = await run({ language: 'python', session_id: sid, code: "print('after')" });
  const s1 = sc(first);
  if (s1.status !== 'success') {
    const said = `${s1.error_message ?? ''} ${s1.stderr ?? ''}`;
    assert.doesNotMatch(said, /died while running the cell/, `${label}: the next call claims its code ran and died: ${show(first, server)}`);
  } else {
    assert.equal(s1.stdout, 'after\n', show(first, server));
  }
  const second = await run({ language: 'python', session_id: sid, code: "print('again')" });
  assert.equal(ok(second).stdout, 'again\n', `${label}: session did not recover`);
  return `next call ${s1.status}${s1.kernel_restarted ? ' (kernel restarted)' : ''}, then success`;
}

kase('signals to the container\'s init (TERM, INT, HUP, USR1, KILL, STOP to pid 1)',
  'host and second session untouched; the next call runs or says it did not run; then success', async () => {
    const sid = 'sess_corpussig0001';
    ok(await run({ language: 'python', session_id: sid, code: 'y = 41' }));
    const k = await run({ language: 'bash', session_id: sid, code: 'for s in TERM INT HUP USR1 KILL STOP; do kill -$s 1; done; sleep 0.5; echo sent' }, 60000);
    const note = await recovers(sid, 'signals to init');
    await server.call('close_session', { session_id: sid });
    return `bash ${sc(k).status}; ${note}; ${await bystander.check()}`;
  });

kase('kill -9 -1 from bash (every process of the sandbox user)',
  'only this sandbox\'s processes die; the next call runs or says it did not run; then success', async () => {
    const sid = 'sess_corpuskill001';
    ok(await run({ language: 'python', session_id: sid, code: 'y = 41' }));
    ok(await run({ language: 'javascript', session_id: sid, code: 'let z = 1' }));
    const k = await run({ language: 'bash', session_id: sid, code: 'kill -9 -1; echo survived' }, 60000);
    const note = await recovers(sid, 'kill -9 -1');
    await server.call('close_session', { session_id: sid });
    return `bash ${sc(k).status}; ${note}; ${await bystander.check()}`;
  });

kase('os._exit in the Python kernel, process.exit in the JavaScript kernel',
  'the call is an error (kernel died); the next call in each language succeeds', async () => {
    const sid = 'sess_corpusexit001';
    const k = await run({ language: 'python', session_id: sid, code: 'import os\nos._exit(3)' }, 60000);
    assert.notEqual(sc(k).status, 'success', `os._exit reported success: ${show(k, server)}`);
    const again = await run({ language: 'python', session_id: sid, code: "print('again')" });
    assert.equal(ok(again).stdout, 'again\n');
    const j = await run({ language: 'javascript', session_id: sid, code: 'process.exit(3)' }, 60000);
    assert.notEqual(sc(j).status, 'success', `process.exit reported success: ${show(j, server)}`);
    const jsAgain = await run({ language: 'javascript', session_id: sid, code: '1 + 1' }, 60000);
    assert.equal(String(ok(jsAgain).returnValue), '2');
    await server.call('close_session', { session_id: sid });
    return `os._exit ${sc(k).status}/${sc(k).error_code}, process.exit ${sc(j).status}/${sc(j).error_code}; both kernels back; ${await bystander.check()}`;
  });
