// Controlled egress (issue 26), what is refused: with --egress proxy a host not listed, an
// IP literal not listed, the lab's decoy (an allowed name on a link-local and on a ULA
// address: refused after resolution), a listed host on a port not listed (plain and CONNECT),
// this machine's own addresses through the proxy, and, without the proxy, raw TCP, UDP and
// IPv6 to the lab: each refusal a 403 with its one-line reason (or a socket error), and the
// lab's logs show that none of them arrived. Per-session narrowing (start_session and a
// one-shot execute_code), and --egress off exactly as before.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { after, afterEach, before, test } from 'node:test';

import { callExec, sc, show, startServer } from './lib.mjs';
import {
  CA_IN_SANDBOX, PY_PRELUDE, bash, decorate, egressArgs, labUp, marker, probe, reasonOf, skipReason, startEgressServer, uploadCa,
  closeSessions,
} from './egress_lab.mjs';

const SKIP = skipReason();
let lab;
let server;
let allow;

before(async () => {
  if (SKIP) return;
  lab = labUp();
  // other.lab.test is listed by its address only: its name stays refused.
  // The decoy's link-local literal is listed too: an address rule refuses it all the same.
  allow = ['api.lab.test', 'pypi.lab.test', 'registry.lab.test', 'metadata.lab.test', 'metadata6.lab.test', lab.address('other.lab.test'),
    lab.address('metadata.lab.test')];
  server = await startEgressServer(lab, { allow, name: 'egress-deny' });
});

afterEach(() => closeSessions(server));

after(async () => {
  await server?.close();
  lab?.down();
});

test('refused through the proxy, each with its 403 reason; none reached the lab', { skip: SKIP }, async (t) => {
  const sid = 'sess_egressdeny01';
  await uploadCa(server, lab, sid);
  const m = marker('deny');
  const api = lab.address('api.lab.test');
  const decoy = lab.address('metadata.lab.test');
  const decoy6 = lab.address6('metadata.lab.test');
  const dl = server.stderrText().match(/listening on http:\/\/127\.0\.0\.1:(\d+)/)[1];
  const cases = {
    'host not listed (http)': [`get('http://other.lab.test/?${m}')`, /^cellgate egress: host not allowed/],
    'host not listed (CONNECT)': [`tunnel('other.lab.test', 443)`, /^cellgate egress: host not allowed/],
    'host not listed (https client)': [`get('https://other.lab.test/?${m}', ca=${JSON.stringify(CA_IN_SANDBOX)})`, null],
    'IP literal of a host listed by name': [`get('http://${api}/?${m}')`, /^cellgate egress: host not allowed/],
    'IP literal, CONNECT': [`tunnel('${api}', 443)`, /^cellgate egress: host not allowed/],
    'decoy name on link-local': [`get('http://metadata.lab.test/?${m}')`, /^cellgate egress: address not allowed/],
    'decoy name on link-local (CONNECT)': [`tunnel('metadata.lab.test', 443)`, /^cellgate egress: address not allowed/],
    'decoy name on ULA': [`get('http://metadata6.lab.test/?${m}')`, /^cellgate egress: address not allowed/],
    'decoy literal, link-local (listed as such)': [`get('http://${decoy}/?${m}')`, /^cellgate egress: address not allowed/],
    'decoy literal, link-local, CONNECT': [`tunnel('${decoy}', 443)`, /^cellgate egress: address not allowed/],
    'listed host, port not listed': [`get('http://api.lab.test:8080/?${m}')`, /^cellgate egress: port not allowed/],
    'listed host, CONNECT to port 22': [`tunnel('api.lab.test', 22)`, /^cellgate egress: port not allowed/],
    'listed host, CONNECT to port 8443': [`tunnel('api.lab.test', 8443)`, /^cellgate egress: port not allowed/],
    // NO_PROXY names these: sent to the proxy as a client that ignores it would.
    'this server\'s listener through the proxy': [`via('http://127.0.0.1:${dl}/?${m}')`, /^cellgate egress: (host|address) not allowed/],
    'localhost through the proxy': [`via('http://localhost:${dl}/?${m}')`, /^cellgate egress: (host|address) not allowed/],
    'the proxy itself through the proxy': [`via('http://127.0.0.1:3128/?${m}')`, /^cellgate egress: (host|address) not allowed/],
    'the lab host side through the proxy': [`get('http://${lab.info.net.host_address}/?${m}')`, /^cellgate egress: (host|address) not allowed/],
  };
  if (decoy6) {
    cases['decoy literal, ULA'] = [`get('http://[${decoy6}]/?${m}')`, /^cellgate egress: (host|address) not allowed/];
    cases['IPv4-mapped IPv6 literal of the decoy'] = [`get('http://[::ffff:${decoy}]/?${m}')`, /^cellgate egress: (host|address) not allowed/];
  }
  const out = await probe(server, sid, `
r = {}
${Object.entries(cases).map(([k, [expr]]) => `r[${JSON.stringify(k)}] = ${expr}`).join('\n')}
out(r)
`, { timeout: 240 });
  const problems = [];
  for (const [k, [, why]] of Object.entries(cases)) {
    const got = out[k];
    if (why === null) {
      // An HTTPS client sees only the refused tunnel (urllib: "Tunnel connection failed: 403").
      if (got.status === 200 || !/403/.test(got.error ?? '')) problems.push(`${k}: ${JSON.stringify(got)}`);
      continue;
    }
    if (got.status !== 403) problems.push(`${k}: not a 403: ${JSON.stringify(got)}`);
    else if (!why.test(String(got.body).split('\n').find((l) => l.startsWith('cellgate egress:')) ?? ''))
      problems.push(`${k}: reason ${JSON.stringify(String(got.body).slice(0, 300))} does not match ${why}`);
  }
  for (const [k, got] of Object.entries(out)) t.diagnostic(`${k}: ${got.status} ${reasonOf(got.body) ?? got.error ?? ''}`);
  assert.deepEqual(problems, [], problems.join('\n'));
  assert.deepEqual(lab.marked(m), [], 'a refused request arrived at a lab host');
  assert.deepEqual(lab.requests('metadata.lab.test'), [], 'the decoy was reached');
  assert.deepEqual(lab.requests('other.lab.test'), [], 'other.lab.test (by name) was reached');
  return `${Object.keys(cases).length} refusals`;
});

test('refused, as curl and node fetch tell it: the 403 and its reason over HTTP, the refused tunnel over HTTPS', { skip: SKIP }, async () => {
  const m = marker('jsdeny');
  const r = await callExec(server.client, { language: 'javascript', session_id: 'sess_egressjsdeny', timeout: 120, code: `
const plain = await fetch('http://other.lab.test/?${m}');
let tls;
try { await fetch('https://other.lab.test/?${m}'); tls = 'fetched'; } catch (e) { tls = String(e.message); }
JSON.stringify({ status: plain.status, body: await plain.text(), tls })` }, { timeoutMs: 180000 });
  assert.equal(sc(r).status, 'success', show(r, server));
  const c = await bash(server, 'sess_egressjsdeny', `curl -sS https://other.lab.test/?${m} 2>&1; curl -sS http://other.lab.test/?${m}; true`);
  assert.match(c.stdout, /CONNECT tunnel failed, response 403/, c.stdout);
  assert.match(c.stdout, /cellgate egress: host not allowed: other\.lab\.test/, c.stdout);
  const js = JSON.parse(sc(r).returnValue);
  assert.equal(js.status, 403, JSON.stringify(js));
  assert.match(js.body, /^cellgate egress: host not allowed: other\.lab\.test/, JSON.stringify(js));
  assert.match(js.tls, /fetch failed.*403/s, `node fetch over HTTPS does not say the proxy refused: ${js.tls}`);
  assert.deepEqual(lab.marked(m), []);
});

test('an IP literal listed as such is allowed (and only it)', { skip: SKIP }, async () => {
  const m = marker('literal');
  const out = await probe(server, 'sess_egresslit001', `
out({'literal': get('http://${lab.address('other.lab.test')}/?${m}'), 'name': get('http://other.lab.test/?${m}')})
`);
  assert.equal(out.literal.status, 200, JSON.stringify(out));
  assert.equal(out.literal.body, 'cglab other.lab.test\n');
  assert.equal(out.name.status, 403, JSON.stringify(out));
  assert.equal(lab.marked(m).length, 1);
});

test('no path around the proxy: raw TCP, UDP and IPv6 to the lab fail in the sandbox', { skip: SKIP }, async () => {
  const targets = [lab.address('api.lab.test'), lab.address('metadata.lab.test'), lab.info.net.host_address];
  if (lab.address6('metadata.lab.test')) targets.push(lab.address6('metadata.lab.test'), lab.info.net.host_address6);
  const out = await probe(server, 'sess_egressraw001', `
t = ${JSON.stringify(targets)}
out({'tcp': {h + ':' + str(p): tcp(h, p) for h in t for p in (80, 443)}, 'udp': {h: udp(h, 53) for h in t},
     'v6routes': [l.split() for l in open('/proc/net/ipv6_route') if not l.split()[-1] == 'lo']})
`);
  for (const [k, v] of Object.entries(out.tcp)) assert.ok(v.startsWith('BLOCKED'), `tcp ${k}: ${v}`);
  for (const [k, v] of Object.entries(out.udp)) assert.ok(v.startsWith('BLOCKED'), `udp ${k}: ${v}`);
  assert.deepEqual(out.v6routes, [], 'an IPv6 route beyond lo');
});

test('per-session narrowing: a narrowed session is refused what another reaches; wider lists are refused', { skip: SKIP }, async () => {
  const narrow = sc(await server.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] }));
  assert.ok(narrow.session_id, JSON.stringify(narrow));
  const m = marker('narrow');
  const inNarrow = await probe(server, narrow.session_id, `out({'api': get('http://api.lab.test/?${m}-a'), 'pypi': get('http://pypi.lab.test/?${m}-n')})`);
  assert.equal(inNarrow.api.status, 200, JSON.stringify(inNarrow));
  assert.equal(inNarrow.pypi.status, 403, JSON.stringify(inNarrow));
  assert.match(String(inNarrow.pypi.body), /^cellgate egress: not allowed for this session/m);
  const wide = await probe(server, 'sess_egresswide01', `out(get('http://pypi.lab.test/?${m}-w'))`);
  assert.equal(wide.status, 200, 'a session with the server\'s list reaches pypi.lab.test');
  assert.deepEqual(lab.marked(m).map((r) => r.path.split('-').at(-1)).sort(), ['a', 'w']);

  // A one-shot run narrowed to pypi.lab.test.
  const once = await probe(server, null, `out({'api': get('http://api.lab.test/?${m}-o'), 'pypi': get('http://pypi.lab.test/?${m}-p')})`,
    { extra: { egress_allow: ['pypi.lab.test'] } });
  assert.equal(once.pypi.status, 200, JSON.stringify(once));
  assert.equal(once.api.status, 403, JSON.stringify(once));
  assert.equal(lab.marked(`${m}-o`).length, 0);

  // Anything wider than the server's list is refused, naming the entry.
  for (const entry of ['other.lab.test', '*.lab.test', 'api.lab.test:8080', 'example.org']) {
    const r = await server.call('start_session', { language: 'python', egress_allow: ['api.lab.test', entry] });
    assert.equal(r.isError, true, `${entry}: ${show(r)}`);
    assert.ok(JSON.stringify(r).includes(entry), `the error names ${entry}: ${show(r)}`);
    const o = await callExec(server.client, { language: 'python', code: 'print(1)', egress_allow: [entry] });
    assert.equal(o.isError, true, `one-shot ${entry}: ${show(o)}`);
    assert.ok(JSON.stringify(o).includes(entry), `the one-shot error names ${entry}: ${show(o)}`);
  }
});

test('--egress-allow given twice: both lists hold, or the server refuses to start (never one silently dropped)', { skip: SKIP }, async () => {
  let twice;
  try {
    twice = decorate(await startServer({ name: 'egress-twice', args: egressArgs(lab, ['api.lab.test']).concat(['--egress-allow', 'pypi.lab.test']) }));
  } catch (err) {
    assert.match(err.message, /--egress-allow/, 'the refusal names the flag');
    return;
  }
  try {
    const m = marker('twice');
    const out = await probe(twice, null, `out({'api': get('http://api.lab.test/?${m}')['status'], 'pypi': get('http://pypi.lab.test/?${m}')['status']})`);
    assert.deepEqual(out, { api: 200, pypi: 200 }, 'a host of the first --egress-allow was dropped');
  } finally {
    await twice.close();
  }
});

// squid keeps shared memory segments in /dev/shm named after its service name; a root
// server's squid runs as Debian's proxy user, a normal user's as that user. One server's
// segments must not stop another's squid (nor outlive the server, which would stop the next).
const USER = 'cellgate-test';
const squidShm = () => fs.readdirSync('/dev/shm').filter((n) => n.startsWith('squid'));
const squidsOf = (uid) => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
  try {
    return fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'squid' && fs.statSync(`/proc/${p}`).uid === uid;
  } catch {
    return false;
  }
});

test('a normal user\'s server (rootless) gets its proxy while a root server\'s runs, and a root server after it', { skip: SKIP || (!userExists(USER) && `no user ${USER}`) }, async () => {
  const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }));
  const before = new Set(squidShm());
  const m = marker('users');
  try {
    let rootless;
    try {
      rootless = decorate(await startServer({ name: 'egress-rootless', asUser: USER, args: ['--http-listen', '127.0.0.1:0', ...egressArgs(lab, ['api.lab.test'])] }));
    } catch (err) {
      assert.fail(`a normal user's --egress proxy server did not start while a root one runs (/dev/shm: ${squidShm().join(' ')}): ${err.message.split('\n').filter((l) => /egress|squid|handshake/.test(l)).join('\n')}`);
    }
    try {
      const out = await probe(rootless, null, `out(get('http://api.lab.test/?${m}-rootless'))`);
      assert.equal(out.status, 200, JSON.stringify(out));
    } finally {
      await rootless.close();
    }
    const after = decorate(await startServer({ name: 'egress-after-rootless', args: ['--http-listen', '127.0.0.1:0', ...egressArgs(lab, ['api.lab.test'])] }));
    try {
      const out = await probe(after, null, `out(get('http://api.lab.test/?${m}-root'))`);
      assert.equal(out.status, 200, JSON.stringify(out));
    } finally {
      await after.close();
    }
    assert.equal(lab.marked(m).length, 2);
  } finally {
    // What a squid of that user left behind would stop every later root server's squid.
    if (squidsOf(uid).length === 0)
      for (const n of squidShm()) if (!before.has(n) && fs.statSync(`/dev/shm/${n}`).uid === uid) fs.rmSync(`/dev/shm/${n}`, { force: true });
  }
});

function userExists(name) {
  try {
    execFileSync('id', [name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function offChecks(srv, label) {
  const api = lab.address('api.lab.test');
  const m = marker(label);
  const r = await callExec(srv.client, { language: 'python', code: PY_PRELUDE + `
out({'proxy_env': sorted(k for k in os.environ if 'proxy' in k.lower()), 'proxy_port': tcp('127.0.0.1', 3128),
     'ip': get('http://${api}/?${m}', timeout=10), 'name': get('http://api.lab.test/?${m}', timeout=10),
     'tcp': tcp('${api}', 80), 'ifaces': [n for _, n in socket.if_nameindex()]})
` });
  assert.equal(sc(r).status, 'success', show(r, srv));
  const out = JSON.parse(sc(r).stdout.trim().split('\n').at(-1));
  assert.deepEqual(out.proxy_env, [], `${label}: proxy variables in the sandbox`);
  assert.ok(out.proxy_port.startsWith('BLOCKED'), `${label}: something listens on 3128: ${out.proxy_port}`);
  assert.equal(out.ip.status, null, `${label}: ${JSON.stringify(out.ip)}`);
  assert.equal(out.name.status, null, `${label}: ${JSON.stringify(out.name)}`);
  assert.ok(out.tcp.startsWith('BLOCKED'), out.tcp);
  assert.deepEqual(out.ifaces, ['lo']);
  assert.deepEqual(lab.marked(m), []);
  const ls = sc(await srv.client.callTool({ name: 'start_session', arguments: { language: 'python' } })).session_id;
  const listed = sc(await srv.client.callTool({ name: 'list_sessions', arguments: {} })).sessions.find((s) => s.session_id === ls);
  return listed;
}

test('--egress off (the default, and said) is today\'s sandbox: no proxy, no way to the lab', { skip: SKIP }, async () => {
  const byDefault = decorate(await startServer({ name: 'egress-default' }));
  try {
    const listed = await offChecks(byDefault, 'default');
    assert.ok(listed.egress === undefined || listed.egress === 'off', JSON.stringify(listed));
    // Asking for a list where the server has none is refused.
    const r = await byDefault.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] });
    assert.equal(r.isError, true, show(r));
  } finally {
    await byDefault.close();
  }
  const said = decorate(await startServer({ name: 'egress-off', args: ['--egress', 'off'] }));
  try {
    const listed = await offChecks(said, 'off');
    assert.equal(listed.egress, 'off', JSON.stringify(listed));
  } finally {
    await said.close();
  }
});
