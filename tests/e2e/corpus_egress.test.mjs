// Hostile corpus, egress (issue 26): with --egress proxy on, sandboxed code tries every way
// out but the allowed hosts: raw TCP, UDP, ICMP and IPv6 to a tests/netlab lab and to this
// machine's own listeners, the proxy's upstream (squid) and anything else the server's
// processes listen on, a PROXY protocol line of its own claiming another session's address,
// request smuggling (CL.TE, TE.CL, two lengths, odd encodings, a Host unlike the URL),
// slowloris from the sandbox and from a slow server, huge headers and URLs. After each group
// a second session keeps its state and a third still fetches an allowed host.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import { caseTable, ownListeners, secondSession, startCorpusServer } from './corpus.mjs';
import { bash, egressArgs, labUp, marker, probe, reasonOf, skipReason } from './egress_lab.mjs';

const kase = caseTable('corpus_egress');
const SKIP = skipReason();
let lab;
let server;
let bystander;
let webs = 0;

before(async () => {
  if (SKIP) return;
  lab = labUp();
  server = await startCorpusServer({
    name: 'corpus-egress',
    args: ['--http-listen', '127.0.0.1:0', ...egressArgs(lab, ['api.lab.test', 'pypi.lab.test', 'metadata.lab.test'])],
  });
  bystander = secondSession(server);
  await bystander.check('at start');
});

after(async () => {
  await server?.close();
  lab?.down();
});

const opts = { skip: SKIP };

/** The bystanders: the second session's state, and a third session's fetch of an allowed host. */
async function stillServed(label) {
  const m = marker(`web${++webs}`);
  const r = await probe(server, 'sess_corpusegweb1', `out(get('http://api.lab.test/?${m}'))`);
  assert.equal(r.status, 200, `a third session cannot fetch an allowed host ${label}: ${JSON.stringify(r)}`);
  assert.equal(lab.marked(m).length, 1);
  return `${await bystander.check(label)}, web 200`;
}

/** Every request the lab's hosts logged, counted per host. */
const labCounts = () => Object.fromEntries(Object.keys(lab.info.hosts).map((n) => [n, lab.requests(n).length]));

/** The pids of PID and every process below it (from /proc/<pid>/stat). */
function descendants(pid) {
  const children = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch {}
  }
  const out = [];
  const walk = [pid];
  while (walk.length) {
    const p = walk.pop();
    out.push(p);
    walk.push(...(children.get(p) ?? []));
  }
  return out;
}

/** The TCP ports the server and its children listen on in the host's namespace ({port, pids}). */
function serverListeners(pid) {
  const inodes = new Map();
  for (const p of descendants(pid)) {
    // Only processes in the server's own network namespace: the sandboxes' are their own.
    try {
      if (fs.readlinkSync(`/proc/${p}/ns/net`) !== fs.readlinkSync(`/proc/${pid}/ns/net`)) continue;
      for (const fd of fs.readdirSync(`/proc/${p}/fd`)) {
        const link = fs.readlinkSync(`/proc/${p}/fd/${fd}`);
        const m = link.match(/^socket:\[(\d+)\]$/);
        if (m) inodes.set(m[1], [...(inodes.get(m[1]) ?? []), p]);
      }
    } catch {}
  }
  const ports = new Map();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${file.split('/').at(-1)}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // LISTEN
      if (!inodes.has(f[9])) continue;
      const port = parseInt(f[1].split(':').at(-1), 16);
      const comm = inodes.get(f[9]).map((p) => {
        try {
          return fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim();
        } catch {
          return '?';
        }
      });
      ports.set(port, [...new Set([...(ports.get(port) ?? []), ...comm])]);
    }
  }
  return [...ports].map(([port, comms]) => ({ port, comms }));
}

kase('with egress on: only lo, no routes; TCP, UDP, ICMP and IPv6 to the lab and to this machine fail (python, javascript, bash)',
  'every probe BLOCKED; 0 accepted by this machine\'s listeners; the lab logged nothing', async () => {
    const listeners = await ownListeners();
    try {
      const before = labCounts();
      const lab4 = ['api.lab.test', 'pypi.lab.test', 'metadata.lab.test'].map((n) => lab.address(n));
      const lab6 = lab.address6('metadata.lab.test') ? [lab.address6('metadata.lab.test'), lab.info.net.host_address6] : [];
      const targets = [...lab4.flatMap((a) => [[a, 80], [a, 443]]), [lab.info.net.host_address, 22], ...lab6.map((a) => [a, 80]),
        ...listeners.targets];
      // UDP to the sandbox's own loopback is no way out: only the other addresses.
      const udpTargets = targets.filter(([h]) => !/^127\.|^::1$/.test(h));
      const out = await probe(server, 'sess_corpusegnet1', `
t = ${JSON.stringify(targets)}
m = {'tcp %s:%d' % (h, p): tcp(h, p) for h, p in t}
for h, p in ${JSON.stringify(udpTargets)}: m['udp %s:%d' % (h, p)] = udp(h, p)
for h in ${JSON.stringify([...lab4, ...lab6])}:
    fam = socket.AF_INET6 if ':' in h else socket.AF_INET
    for kind, typ, proto in (('raw', socket.SOCK_RAW, socket.IPPROTO_ICMPV6 if ':' in h else socket.IPPROTO_ICMP),
                             ('ping', socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6 if ':' in h else socket.IPPROTO_ICMP)):
        try:
            s = socket.socket(fam, typ, proto)
            try:
                s.sendto(b'\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00' if fam == socket.AF_INET else b'\\x80\\x00\\x00\\x00\\x00\\x00\\x00\\x00', (h, 0))
                m['icmp %s %s' % (kind, h)] = 'SENT'
            except OSError as e:
                m['icmp %s %s' % (kind, h)] = 'BLOCKED ' + os.strerror(e.errno)
            finally:
                s.close()
        except OSError as e:
            m['icmp %s %s' % (kind, h)] = 'BLOCKED socket ' + (os.strerror(e.errno) if e.errno else type(e).__name__)
out({'m': m, 'ifaces': [n for _, n in socket.if_nameindex()], 'route': open('/proc/net/route').read().splitlines()[1:],
     'v6': [l.split() for l in open('/proc/net/ipv6_route') if l.split()[-1] != 'lo']})
`);
      for (const [k, v] of Object.entries(out.m)) assert.ok(v.startsWith('BLOCKED'), `python ${k}: ${v}`);
      assert.deepEqual(out.ifaces, ['lo']);
      assert.deepEqual(out.route, []);
      assert.deepEqual(out.v6, []);
      const js = await callExec(server.client, { language: 'javascript', session_id: 'sess_corpusegnet1', timeout: 120, code: `
const net = require('net'); const dgram = require('dgram');
const one = ([host, port]) => new Promise((done) => {
  const s = net.connect({ host, port, timeout: 2000 });
  s.on('connect', () => { s.destroy(); done('CONNECTED'); });
  s.on('timeout', () => { s.destroy(); done('BLOCKED timeout'); });
  s.on('error', (e) => done('BLOCKED ' + e.code));
});
const u = ([host, port]) => new Promise((done) => {
  const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  s.send('probe', port, host, (e) => { s.close(); done(e ? 'BLOCKED ' + e.code : 'SENT'); });
});
const t = ${JSON.stringify(targets)};
JSON.stringify({ tcp: await Promise.all(t.map(one)), udp: await Promise.all(${JSON.stringify(udpTargets)}.map(u)) })` }, { timeoutMs: 180000 });
      assert.equal(sc(js).status, 'success', show(js, server));
      const jm = JSON.parse(sc(js).returnValue);
      jm.tcp.forEach((v, i) => assert.ok(v.startsWith('BLOCKED'), `javascript tcp ${targets[i].join(':')}: ${v}`));
      jm.udp.forEach((v, i) => assert.ok(v.startsWith('BLOCKED'), `javascript udp ${udpTargets[i].join(':')}: ${v}`));
      const lines = [...targets.map(([h, p]) => `(timeout 3 bash -c 'echo x > /dev/tcp/${h}/${p}') 2>/dev/null && echo "OPEN ${h}:${p}"`),
        ...udpTargets.map(([h, p]) => `(timeout 3 bash -c 'echo x > /dev/udp/${h}/${p}') 2>/dev/null && echo "UDP ${h}:${p}"`)];
      const sh = await bash(server, 'sess_corpusegnet1', lines.join('\n') + '\necho done', 120);
      assert.equal(sh.stdout, 'done\n', `bash got out: ${sh.stdout}`);
      assert.equal(listeners.accepted(), 0, 'a listener of this machine accepted a connection from the sandbox');
      assert.deepEqual(labCounts(), before, 'the lab logged a request');
      return `${Object.keys(out.m).length} python, ${jm.tcp.length + jm.udp.length} javascript, ${lines.length} bash probes blocked; ${await stillServed('after network')}`;
    } finally {
      await listeners.close();
    }
  }, opts);

kase('the proxy\'s upstream (squid) and every other listener of the server\'s processes: unreachable from the sandbox',
  'squid found listening on the host; each of its ports BLOCKED at 127.0.0.1 and the lab side of the host; CONNECT to them 403', async () => {
    const found = serverListeners(server.pid);
    assert.ok(found.some((l) => /squid/.test(l.comms.join(' '))), `no squid listener among the server's processes: ${JSON.stringify(found)}`);
    const ports = found.map((l) => l.port);
    const hosts = ['127.0.0.1', lab.info.net.host_address];
    const out = await probe(server, 'sess_corpusegup01', `
ports = ${JSON.stringify(ports)}
m = {'tcp %s:%d' % (h, p): tcp(h, p) for h in ${JSON.stringify(hosts)} for p in ports if p != 3128}
for p in ports:
    for h in ('127.0.0.1', 'localhost', ${JSON.stringify(lab.info.net.host_address)}):
        r = tunnel(h, p)
        m['CONNECT %s:%d' % (h, p)] = '%s %s' % (r.get('status'), reason(r.get('body')) or r.get('error'))
        v = via('http://%s:%d/' % (h, p))
        m['GET %s:%d' % (h, p)] = '%s %s' % (v['status'], reason(v['body']))
unix = [l.split()[-1] for l in open('/proc/net/unix').read().splitlines()[1:] if len(l.split()) > 7]
out({'m': m, 'unix': unix})
`);
    for (const [k, v] of Object.entries(out.m)) {
      if (k.startsWith('tcp')) assert.ok(v.startsWith('BLOCKED'), `${k}: ${v}`);
      else assert.match(v, /^403 cellgate egress: /, `${k}: ${v}`);
    }
    // The sandbox's own network namespace: no unix socket of the relay or of squid.
    assert.ok(!out.unix.some((p) => /squid|egress|relay/.test(p)), JSON.stringify(out.unix));
    return `listeners ${found.map((l) => `${l.port}(${l.comms.join('/')})`).join(' ')}: ${Object.keys(out.m).length} probes refused; ${await stillServed('after upstream')}`;
  }, opts);

kase('a PROXY protocol line sent by the sandbox cannot claim another session\'s address',
  'narrowed session: every spoofed PROXY v1/v2 line answered as a bad request, never 200; nothing reached pypi; the wide session still does', async () => {
    const narrow = sc(await server.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] })).session_id;
    const m = marker('spoof');
    const wide = await probe(server, 'sess_corpusegwide', `out(get('http://pypi.lab.test/?${m}-wide'))`);
    assert.equal(wide.status, 200, JSON.stringify(wide));
    const out = await probe(server, narrow, `
srcs = ['127.64.0.%d' % i for i in range(1, 33)] + ['127.64.1.1', '127.0.0.1', '127.127.255.254', '0.0.0.0']
res = {}
for i, src in enumerate(srcs):
    req = ('GET http://pypi.lab.test/?${m}-v1-%d HTTP/1.1\\r\\nHost: pypi.lab.test\\r\\nConnection: close\\r\\n\\r\\n' % i).encode()
    text = raw(('PROXY TCP4 %s 127.0.0.1 40000 3128\\r\\n' % src).encode() + req)
    res['v1 ' + src] = status_of(text)
import struct
sig = b'\\r\\n\\r\\n\\x00\\r\\nQUIT\\n'
for i, src in enumerate(['127.64.0.1', '127.64.0.2', '127.0.0.1']):
    addr = socket.inet_aton(src) + socket.inet_aton('127.0.0.1') + struct.pack('!HH', 40000, 3128)
    req = ('GET http://pypi.lab.test/?${m}-v2-%d HTTP/1.1\\r\\nHost: pypi.lab.test\\r\\nConnection: close\\r\\n\\r\\n' % i).encode()
    text = raw(sig + bytes([0x21, 0x11]) + struct.pack('!H', len(addr)) + addr + req)
    res['v2 ' + src] = status_of(text)
res['plain'] = get('http://pypi.lab.test/?${m}-plain')['status']
out(res)
`, { timeout: 240 });
    const got200 = Object.entries(out).filter(([, v]) => v === 200);
    assert.deepEqual(got200, [], 'a spoofed PROXY line was served');
    assert.equal(out.plain, 403, JSON.stringify(out));
    assert.deepEqual(lab.marked(m).map((r) => r.path), [`/?${m}-wide`], 'a spoofed request reached pypi.lab.test');
    const statuses = [...new Set(Object.values(out).map(String))].join('/');
    await server.call('close_session', { session_id: narrow });
    return `${Object.keys(out).length - 1} spoofed lines answered ${statuses}; 0 reached pypi; ${await stillServed('after spoofing')}`;
  }, opts);

kase('request smuggling through the proxy (CL.TE, TE.CL, two Content-Lengths, odd Transfer-Encodings, Host unlike the URL, pipelined)',
  'no request reaches a host not allowed (other.lab.test, the decoy); the proxy serves the next request', async () => {
    const m = marker('smuggle');
    // Real CR LF here: JSON carries them to the probe as \r\n escapes.
    const inner = (tag, host = 'other.lab.test') => `GET http://${host}/?${m}-${tag} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const post = (headers, body) => `POST http://api.lab.test/headers?${m}-outer HTTP/1.1\r\nHost: api.lab.test\r\n${headers}\r\n${body}`;
    const clte = (tag, te, host) => {
      const body = `0\r\n\r\n${inner(tag, host)}`;
      return post(`Content-Length: ${body.length}\r\n${te}`, body);
    };
    const cases = {
      'CL.TE': clte('clte', 'Transfer-Encoding: chunked\r\n'),
      'TE.CL': post('Content-Length: 4\r\nTransfer-Encoding: chunked\r\n', `${inner('tecl').length.toString(16)}\r\n${inner('tecl')}\r\n0\r\n\r\n`),
      'two Content-Lengths': post(`Content-Length: 0\r\nContent-Length: ${inner('twocl').length}\r\n`, inner('twocl')),
      'TE xchunked': clte('tex', 'Transfer-Encoding: xchunked\r\n'),
      'TE with a space': clte('tesp', 'Transfer-Encoding : chunked\r\n'),
      'TE chunked, identity': clte('teid', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n'),
      'TE in a folded line': clte('tefold', 'X-Fold: a\r\n Transfer-Encoding: chunked\r\n'),
      'the decoy behind CL.TE': clte('decoy', 'Transfer-Encoding: chunked\r\n', 'metadata.lab.test'),
      'Host unlike the URL (allowed URL)': `GET http://api.lab.test/?${m}-hostmix HTTP/1.1\r\nHost: other.lab.test\r\nConnection: close\r\n\r\n`,
      'Host unlike the URL (denied URL)': `GET http://other.lab.test/?${m}-hostmix2 HTTP/1.1\r\nHost: api.lab.test\r\nConnection: close\r\n\r\n`,
      'origin-form with a Host': `GET /?${m}-origin HTTP/1.1\r\nHost: other.lab.test\r\nConnection: close\r\n\r\n`,
      'pipelined: allowed then denied': `GET http://api.lab.test/?${m}-pipe1 HTTP/1.1\r\nHost: api.lab.test\r\n\r\n${inner('pipe2').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')}`,
      'absolute URL with userinfo': `GET http://api.lab.test@other.lab.test/?${m}-userinfo HTTP/1.1\r\nHost: other.lab.test\r\nConnection: close\r\n\r\n`,
      'CONNECT with a Host unlike it': 'CONNECT other.lab.test:443 HTTP/1.1\r\nHost: api.lab.test:443\r\nConnection: close\r\n\r\n',
    };
    const out = await probe(server, 'sess_corpusegsmug', `
res = {}
for k, req in ${JSON.stringify(cases)}.items():
    text = raw(req.encode('latin-1'), timeout=8, keep=4000)
    res[k] = [status_of(text), [l for l in text.split('\\r\\n') if l.startswith('HTTP/')]]
res['after'] = get('http://api.lab.test/?${m}-after')['status']
out(res)
`, { timeout: 300 });
    const reached = lab.marked(m).filter((r) => r.name !== 'api.lab.test');
    assert.deepEqual(reached, [], `a smuggled request reached a host not allowed: ${JSON.stringify(reached)}`);
    assert.equal(out.after, 200, 'the proxy serves the next request');
    // What api.lab.test itself got: never a request that names another host in its line.
    for (const r of lab.requests('api.lab.test')) assert.ok(!/other\.lab\.test|metadata/.test(r.path), JSON.stringify(r));
    const summary = Object.entries(out).filter(([k]) => k !== 'after').map(([k, [s, lines]]) => `${k}: ${lines.map((l) => l.split(' ')[1]).join('+') || s}`).join('; ');
    return `${summary}; ${await stillServed('after smuggling')}`;
  }, opts);

kase('slowloris from the sandbox (its 8 connections trickling a byte a second) and from a slow server leave another session\'s fetch working',
  'the other session\'s fetches all 200 while both trickle; the trickling session is told its limit', async () => {
    const sid = 'sess_corpusegslow';
    const started = await bash(server, sid, String.raw`nohup /usr/bin/python3 -c '
import socket, threading, time
def trickle(i):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=300)
        for b in b"GET http://api.lab.test/?slowloris HTTP/1.1\r\nHost: api.lab.test\r\nX-Pad: " + b"a" * 200:
            s.sendall(bytes([b])); time.sleep(1)
    except OSError:
        pass
for i in range(8): threading.Thread(target=trickle, args=(i,), daemon=True).start()
open("/tmp/slow", "w").write("8\n")
time.sleep(240)
' >/tmp/slow.log 2>&1 &
echo $! > /tmp/slow.pid
for i in $(seq 200); do [ -s /tmp/slow ] && break; sleep 0.1; done
cat /tmp/slow`, 60);
    assert.equal(started.stdout, '8\n', show(started));
    const m = marker('slow');
    // The trickling session's ninth connection is refused; a slow server's answer in a second session.
    const ninth = await probe(server, sid, `time.sleep(2)\nout(via('http://api.lab.test/?${m}-ninth'))`);
    const slowSrv = await bash(server, 'sess_corpusegslo2', `nohup curl -sS -o /tmp/dots 'http://api.lab.test/slow?bytes=60&delay_ms=1000' >/dev/null 2>&1 & echo started`);
    assert.equal(slowSrv.stdout, 'started\n');
    const fetches = await probe(server, 'sess_corpusegweb1', `
res = []
for i in range(5):
    res.append(get('http://api.lab.test/bytes/100000?${m}-%d' % i, keep=0)['status']); time.sleep(1)
out(res)
`);
    assert.deepEqual(fetches, [200, 200, 200, 200, 200], 'another session\'s fetches while both trickle');
    await bash(server, sid, 'kill -9 $(cat /tmp/slow.pid) 2>/dev/null; echo stopped', 30);
    await bash(server, 'sess_corpusegslo2', 'pkill -9 curl 2>/dev/null; echo stopped', 30);
    return `ninth of the trickling session: ${ninth.status} ${reasonOf(ninth.body) ?? ''}; other session 5x200; ${await stillServed('after slowloris')}`;
  }, opts);

kase('huge headers and URLs through the proxy: refused, and the proxy serves the next request',
  'a 100 KB header, a 100 KB URL, 10,000 header lines, a 1 MB request line without an end: 4xx or closed, never forwarded', async () => {
    const m = marker('huge');
    const out = await probe(server, 'sess_corpusegbig1', `
res = {}
res['100 KB header'] = status_of(raw(('GET http://api.lab.test/?${m}-h HTTP/1.1\\r\\nHost: api.lab.test\\r\\nX-Big: ' + 'a' * 100000 + '\\r\\nConnection: close\\r\\n\\r\\n').encode()))
res['100 KB URL'] = status_of(raw(('GET http://api.lab.test/?${m}-u' + 'b' * 100000 + ' HTTP/1.1\\r\\nHost: api.lab.test\\r\\nConnection: close\\r\\n\\r\\n').encode()))
res['10,000 header lines'] = status_of(raw(('GET http://api.lab.test/?${m}-l HTTP/1.1\\r\\nHost: api.lab.test\\r\\n' + ''.join('X-%d: y\\r\\n' % i for i in range(10000)) + 'Connection: close\\r\\n\\r\\n').encode()))
res['1 MB request line, no end'] = status_of(raw(('GET http://api.lab.test/?${m}-e' + 'c' * 1000000).encode(), timeout=30))
res['after'] = get('http://api.lab.test/?${m}-after')['status']
out(res)
`, { timeout: 240 });
    for (const k of ['100 KB header', '100 KB URL', '10,000 header lines', '1 MB request line, no end'])
      assert.ok(out[k] === null || (out[k] >= 400 && out[k] < 500), `${k}: ${out[k]}`);
    assert.equal(out.after, 200);
    assert.deepEqual(lab.marked(m).map((r) => r.path), [`/?${m}-after`], 'a huge request was forwarded');
    return `${Object.entries(out).map(([k, v]) => `${k} ${v ?? 'closed'}`).join(', ')}; ${await stillServed('after huge headers')}`;
  }, opts);

kase('an allowed name that comes to resolve to the decoy\'s link-local address (the hosts file changed, squid reloaded)',
  'refused as "address not allowed" after the reload, the decoy never reached (and whether it is allowed again once the name is back)', async () => {
    const hosts = lab.hostsFile;
    const original = fs.readFileSync(hosts, 'utf8');
    const api = lab.address('api.lab.test');
    const decoy = lab.address('metadata.lab.test');
    const m = marker('rebind');
    // squid reads its hosts file when it starts and when it reloads, which a session with a
    // list of its own makes it do (docs/egress.md).
    const reload = async () => {
      const sid = sc(await server.call('start_session', { language: 'python', egress_allow: ['pypi.lab.test'] })).session_id;
      await server.call('close_session', { session_id: sid });
    };
    let out;
    try {
      fs.writeFileSync(hosts, original.replace(`${api} api.lab.test`, `${decoy} api.lab.test`));
      await reload();
      out = await probe(server, 'sess_corpusegrbnd', `
res = []
for i in range(10):
    r = get('http://api.lab.test/?${m}-%d' % i)
    res.append([r['status'], reason(r.get('body'))])
    if r['status'] == 403: break
    time.sleep(1)
out(res)
`);
    } finally {
      fs.writeFileSync(hosts, original);
    }
    const last = out.at(-1);
    assert.deepEqual([last[0], /^cellgate egress: address not allowed/.test(last[1] ?? '')], [403, true], JSON.stringify(out));
    assert.deepEqual(lab.requests('metadata.lab.test'), [], 'the decoy was reached through the changed name');
    // Back to its lab address: fails closed meanwhile; reported, not a security check.
    await reload();
    const back = await probe(server, 'sess_corpusegrbnd', `
for i in range(10):
    r = get('http://api.lab.test/?${m}-back')
    if r['status'] == 200: break
    time.sleep(1)
out([r['status'], reason(r.get('body'))])
`);
    await server.call('close_session', { session_id: 'sess_corpusegrbnd' });
    if (back[0] !== 200) return `${out.length} tries: ${out.map((x) => x[0]).join(',')} (${last[1]}); back: still ${back.join(' ')} 10 s after the name was restored and squid reloaded`;
    return `${out.length} tries: ${out.map((x) => x[0]).join(',')} (${last[1]}); back: ${back[0]}; ${await stillServed('after the name moved')}`;
  }, opts);
