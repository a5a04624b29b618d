// Controlled egress (issue 26), what works: with --egress proxy, sandboxed code reaches the
// listed hosts of a tests/netlab lab over HTTP and HTTPS (the lab's CA given to the client)
// from python urllib, requests, curl and node fetch; pip and npm typed in bash and
// install_package install through the proxy from --pip-index-url / --npm-registry; and every
// request is audited: the execution log entry of the run that made it, the session's log,
// /metrics and list_sessions. Denials are e2e_egress_deny, limits e2e_egress_limits.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import {
  CA_IN_SANDBOX, INDEX_URL, PROXY, REGISTRY_URL, bash, egressRecords, eventually, labUp, marker, probe, reasonOf,
  sample, skipReason, startEgressServer, uploadCa,
  closeSessions,
} from './egress_lab.mjs';

const SKIP = skipReason();
const ALLOW = ['api.lab.test', 'pypi.lab.test', 'registry.lab.test'];
let lab;
let server;

before(async () => {
  if (SKIP) return;
  lab = labUp();
  server = await startEgressServer(lab, { allow: ALLOW, name: 'egress' });
});

afterEach(() => closeSessions(server));

after(async () => {
  await server?.close();
  lab?.down();
});

const HELLO = 'hello from cglab-hello 1.0 with cglab-dep 1.0';

test('the sandbox has the proxy settings and still only lo', { skip: SKIP }, async () => {
  const out = await probe(server, 'sess_egressenv001', `
out({'env': {k: os.environ.get(k) for k in ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy', 'PIP_INDEX_URL', 'npm_config_registry']},
     'ifaces': [n for _, n in socket.if_nameindex()], 'route': open('/proc/net/route').read().splitlines()[1:]})
`);
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) assert.equal(out.env[k], PROXY, `${k}: ${JSON.stringify(out.env)}`);
  assert.match(out.env.NO_PROXY ?? out.env.no_proxy ?? '', /localhost/);
  assert.match(out.env.NO_PROXY ?? out.env.no_proxy ?? '', /127\.0\.0\.1/);
  assert.equal(out.env.PIP_INDEX_URL, INDEX_URL);
  assert.equal(out.env.npm_config_registry, REGISTRY_URL);
  assert.deepEqual(out.ifaces, ['lo']);
  assert.deepEqual(out.route, [], 'no IPv4 route: the proxy is a listener on lo');
});

test('python urllib: an allowed host over HTTP and HTTPS (the lab CA), GET and POST, byte-exact', { skip: SKIP }, async () => {
  const sid = 'sess_egressurl001';
  await uploadCa(server, lab, sid);
  const m = marker('urllib');
  const out = await probe(server, sid, `
import hashlib
blob = bytes(range(256)) * 4096
r = {'http': get('http://api.lab.test/?${m}-http'), 'https': get('https://api.lab.test/?${m}-https', ca=${JSON.stringify(CA_IN_SANDBOX)}),
     'bytes': get('https://api.lab.test/bytes/1000000?${m}', ca=${JSON.stringify(CA_IN_SANDBOX)}, keep=0),
     'post': get('http://api.lab.test/headers?${m}-post', method='POST', data=blob, keep=100000)}
r['post_sha'] = hashlib.sha256(blob).hexdigest()
out(r)
`);
  assert.deepEqual([out.http.status, out.http.body], [200, 'cglab api.lab.test\n'], JSON.stringify(out.http));
  assert.deepEqual([out.https.status, out.https.body], [200, 'cglab api.lab.test\n'], JSON.stringify(out.https));
  assert.deepEqual([out.bytes.status, out.bytes.length], [200, 1000000]);
  assert.equal(out.post.status, 200, JSON.stringify(out.post));
  const echo = JSON.parse(out.post.body);
  assert.equal(echo.body_length, 1048576);
  assert.equal(echo.body_sha256, out.post_sha);
  const arrived = lab.marked(m).map((r) => `${r.name} ${r.scheme} ${r.method}`).sort();
  assert.deepEqual(arrived, ['api.lab.test http GET', 'api.lab.test http POST', 'api.lab.test https GET', 'api.lab.test https GET']);
});

test('requests (or pip\'s vendored copy): HTTP and HTTPS through the proxy', { skip: SKIP }, async () => {
  const sid = 'sess_egressreq001';
  await uploadCa(server, lab, sid);
  const m = marker('requests');
  const out = await probe(server, sid, `
try:
    import requests; which = 'requests'
except ImportError:
    from pip._vendor import requests; which = 'pip._vendor.requests'
a = requests.get('http://api.lab.test/?${m}', timeout=60)
b = requests.get('https://api.lab.test/headers?${m}', verify=${JSON.stringify(CA_IN_SANDBOX)}, timeout=60)
out({'which': which, 'http': [a.status_code, a.text], 'https': [b.status_code, b.json()['headers'].get('Host')]})
`);
  assert.deepEqual(out.http, [200, 'cglab api.lab.test\n'], JSON.stringify(out));
  assert.deepEqual(out.https, [200, 'api.lab.test'], JSON.stringify(out));
  assert.equal(lab.marked(m).length, 2);
});

test('curl in bash: HTTP and HTTPS (--cacert), its proxy from the environment', { skip: SKIP }, async () => {
  const sid = 'sess_egresscurl01';
  await uploadCa(server, lab, sid);
  const m = marker('curl');
  const s = await bash(server, sid, `
curl -sS -w ' %{http_code}\\n' http://api.lab.test/?${m}-a
curl -sS -w ' %{http_code}\\n' --cacert ${CA_IN_SANDBOX} https://api.lab.test/?${m}-b
curl -sS -o /dev/null -w '%{size_download} %{http_code}\\n' --cacert ${CA_IN_SANDBOX} https://api.lab.test/bytes/2000000?${m}-c`);
  assert.equal(s.stdout, `cglab api.lab.test\n 200\ncglab api.lab.test\n 200\n2000000 200\n`, show(s));
  assert.deepEqual(lab.marked(m).map((r) => r.scheme).sort(), ['http', 'https', 'https']);
});

test('node fetch in the JavaScript kernel (HTTP), and a node child with NODE_EXTRA_CA_CERTS (HTTPS)', { skip: SKIP }, async () => {
  const sid = 'sess_egressnode01';
  await uploadCa(server, lab, sid);
  const m = marker('fetch');
  const r = await callExec(server.client, { language: 'javascript', session_id: sid, timeout: 120, code: `
const res = await fetch('http://api.lab.test/?${m}-kernel');
const text = await res.text();
const { execFileSync } = require('child_process');
const child = execFileSync('node', ['-e', "fetch('https://api.lab.test/?${m}-child').then(async (r) => console.log(r.status, JSON.stringify(await r.text())))"],
  { env: { ...process.env, NODE_EXTRA_CA_CERTS: '${CA_IN_SANDBOX}' }, encoding: 'utf8' });
JSON.stringify({ status: res.status, text, child: child.trim() })` }, { timeoutMs: 180000 });
  assert.equal(sc(r).status, 'success', show(r, server));
  const out = JSON.parse(sc(r).returnValue);
  assert.equal(out.status, 200, JSON.stringify(out));
  assert.equal(out.text, 'cglab api.lab.test\n');
  assert.equal(out.child, '200 "cglab api.lab.test\\n"');
  assert.deepEqual(lab.marked(m).map((x) => x.scheme).sort(), ['http', 'https']);
});

test('pip install typed in bash: from --pip-index-url through the proxy, with its dependency', { skip: SKIP }, async () => {
  const sid = 'sess_egresspip001';
  const s = await bash(server, sid, `pip install cglab-hello 2>&1 | tail -n 3
python3 -c 'from cglab_hello import hello; print(hello())'`);
  assert.match(s.stdout, new RegExp(`${HELLO}\\n$`), show(s));
  // The session's running Python kernel imports it too.
  const k = await callExec(server.client, { language: 'python', session_id: sid, code: 'import importlib\nimportlib.invalidate_caches()\nfrom cglab_hello import hello\nprint(hello())' });
  assert.equal(sc(k).stdout, `${HELLO}\n`, show(k, server));
  const paths = lab.requests('pypi.lab.test').map((r) => r.path);
  assert.ok(paths.includes('/simple/cglab-hello/'), paths.join(' '));
  assert.ok(paths.some((p) => p.startsWith('/packages/cglab_dep-1.0')), paths.join(' '));
  // Over HTTPS too, the model naming the index and the lab's CA itself.
  await uploadCa(server, lab, sid);
  const t = await bash(server, sid, `pip download --no-deps -d /tmp/dl --index-url https://pypi.lab.test/simple/ --cert ${CA_IN_SANDBOX} cglab-dep 2>&1 | tail -n 1; ls /tmp/dl`);
  assert.match(t.stdout, /cglab_dep-1\.0-py3-none-any\.whl\n$/, show(t));
});

test('install_package (python) installs from the index through the proxy when there is no wheelhouse', { skip: SKIP }, async () => {
  const sid = sc(await server.call('start_session', { language: 'python' })).session_id;
  assert.equal(sc(await callExec(server.client, { language: 'python', session_id: sid, code: 'kept = 7' })).status, 'success');
  const before = lab.requests('pypi.lab.test').length;
  const r = await server.call('install_package', { session_id: sid, package: 'cglab-hello', language: 'python' });
  assert.equal(r.isError, false, show(r, server));
  assert.equal(sc(r).package, 'cglab-hello');
  assert.equal(sc(r).version, '1.0');
  const after = await callExec(server.client, { language: 'python', session_id: sid, code: 'from cglab_hello import hello\nprint(hello(), kept)' });
  assert.equal(sc(after).stdout, `${HELLO} 7\n`, show(after, server));
  assert.ok(lab.requests('pypi.lab.test').length > before, 'the index was asked');
});

test('with --wheelhouse, install_package takes the local wheel first and goes online only for what it lacks', { skip: SKIP }, async () => {
  const house = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-egress-wheels-'));
  const dep = lab.info.wheels.find((w) => w.name === 'cglab-dep');
  fs.copyFileSync(path.join(lab.dir, 'wheels', dep.file), path.join(house, dep.file));
  fs.chmodSync(house, 0o755);
  fs.chmodSync(path.join(house, dep.file), 0o644);
  const local = await startEgressServer(lab, { allow: ALLOW, name: 'egress-wheelhouse', extra: ['--wheelhouse', house] });
  try {
    const pypi = () => lab.requests('pypi.lab.test').length;
    const before = pypi();
    const sid = sc(await local.call('start_session', { language: 'python' })).session_id;
    const r = await local.call('install_package', { session_id: sid, package: 'cglab-dep', language: 'python' });
    assert.equal(r.isError, false, show(r, local));
    assert.equal(pypi(), before, 'the index was asked for a package the wheelhouse has');
    const hello = await local.call('install_package', { session_id: sid, package: 'cglab-hello', language: 'python' });
    assert.equal(hello.isError, false, show(hello, local));
    assert.ok(pypi() > before, 'the index was not asked for a package the wheelhouse lacks');
    const out = await callExec(local.client, { language: 'python', session_id: sid, code: 'from cglab_hello import hello\nprint(hello())' });
    assert.equal(sc(out).stdout, `${HELLO}\n`, show(out, local));
  } finally {
    await local.close();
    fs.rmSync(house, { recursive: true, force: true });
  }
});

test('install_package\'s hash-checked mode: the lab\'s sha256s install, a wrong one is refused', { skip: SKIP }, async () => {
  const sha = Object.fromEntries(lab.info.wheels.map((w) => [`${w.name}==${w.version}`, w.sha256]));
  const bad = sc(await server.call('start_session', { language: 'python' })).session_id;
  const wrong = await server.call('install_package', { session_id: bad, package: 'cglab-hello==1.0', language: 'python',
    hashes: { ...sha, 'cglab-dep==1.0': '0'.repeat(64) } });
  assert.equal(wrong.isError, true, show(wrong, server));
  assert.match(JSON.stringify(sc(wrong)), /hash/i, show(wrong, server));
  const gone = await callExec(server.client, { language: 'python', session_id: bad, code: 'import importlib.util\nprint(importlib.util.find_spec("cglab_dep"), importlib.util.find_spec("cglab_hello"))' });
  assert.equal(sc(gone).stdout, 'None None\n', show(gone, server));
  const good = sc(await server.call('start_session', { language: 'python' })).session_id;
  const r = await server.call('install_package', { session_id: good, package: 'cglab-hello==1.0', language: 'python', hashes: sha });
  assert.equal(r.isError, false, show(r, server));
  const out = await callExec(server.client, { language: 'python', session_id: good, code: 'from cglab_hello import hello\nprint(hello())' });
  assert.equal(sc(out).stdout, `${HELLO}\n`, show(out, server));
});

test('instructions and the tool descriptions name the reachable hosts', { skip: SKIP }, async () => {
  const said = server.client.getInstructions() ?? '';
  for (const host of ALLOW) assert.ok(said.includes(host), `instructions lack ${host}: ${said}`);
  for (const name of ['execute_code', 'install_package']) {
    const tool = server.tools.find((t) => t.name === name);
    assert.ok(ALLOW.every((h) => tool.description.includes(h)), `${name}: ${tool.description}`);
  }
});

test('npm install typed in bash (the lab\'s own package and left-pad), and install_package (node)', { skip: SKIP }, async () => {
  const sid = 'sess_egressnpm001';
  const s = await bash(server, sid, `cd /mnt/data && npm install --no-audit --no-fund cglab-npm-hello left-pad 2>&1 | tail -n 2
node -e 'console.log(require("cglab-npm-hello")(), JSON.stringify(require("left-pad")("x", 3)))'`);
  assert.match(s.stdout, /hello from cglab-npm-hello "  x"\n$/, show(s));
  const paths = lab.requests('registry.lab.test').map((r) => r.path);
  assert.ok(paths.includes('/cglab-npm-hello') && paths.includes('/left-pad'), paths.join(' '));
  assert.ok(paths.some((p) => p.endsWith('.tgz')), paths.join(' '));

  const js = sc(await server.call('start_session', { language: 'javascript' })).session_id;
  assert.equal(sc(await callExec(server.client, { language: 'javascript', session_id: js, code: 'let w = 3; w' })).status, 'success');
  for (const [pkg, name, version] of [['cglab-npm-hello', 'cglab-npm-hello', '1.0.0'], ['left-pad@1.3.0', 'left-pad', '1.3.0']]) {
    const r = await server.call('install_package', { session_id: js, package: pkg, language: 'node' });
    assert.equal(r.isError, false, show(r, server));
    assert.deepEqual([sc(r).package, sc(r).version], [name, version]);
  }
  const out = await callExec(server.client, { language: 'javascript', session_id: js, code: 'console.log(require("cglab-npm-hello")(), require("left-pad")("y", 2), w)' });
  assert.equal(sc(out).stdout, 'hello from cglab-npm-hello  y 3\n', show(out, server));
});

test('audit: the run\'s execution log entry, the session\'s log, /metrics and list_sessions', { skip: SKIP }, async () => {
  const sid = 'sess_egressaud001';
  await uploadCa(server, lab, sid);
  const metricsBefore = await server.metricsText();
  const m = marker('audit');
  const out = await probe(server, sid, `
# ${m}
out({'ok': get('http://api.lab.test/bytes/5000?${m}'), 'tls': get('https://api.lab.test/?${m}', ca=${JSON.stringify(CA_IN_SANDBOX)}),
     'no': get('http://other.lab.test/?${m}')})
`);
  assert.equal(out.ok.status, 200);
  assert.equal(out.tls.status, 200);
  assert.equal(out.no.status, 403, JSON.stringify(out.no));
  assert.match(reasonOf(out.no.body) ?? '', /^cellgate egress: host not allowed/, out.no.body);

  const records = await egressRecords(server, out._execution_id, m, (l) => l.length >= 3);
  const get = records.find((x) => x.host === 'api.lab.test' && x.method === 'GET');
  assert.ok(get, JSON.stringify(records));
  assert.equal(get.port, 80);
  assert.equal(get.status, 200);
  assert.equal(get.decision, 'allowed');
  assert.ok(get.bytes_down >= 5000, JSON.stringify(get));
  assert.ok(get.bytes_up > 0, JSON.stringify(get));
  assert.equal(typeof get.ms, 'number');
  const tunnel = records.find((x) => x.method === 'CONNECT');
  assert.ok(tunnel, JSON.stringify(records));
  assert.deepEqual([tunnel.host, tunnel.port, tunnel.decision], ['api.lab.test', 443, 'allowed']);
  const denied = records.find((x) => x.host === 'other.lab.test');
  assert.ok(denied, JSON.stringify(records));
  assert.deepEqual([denied.status, denied.decision], [403, 'denied']);
  assert.match(denied.reason, /host not allowed/);

  // The session's log has them too.
  const lines = await eventually(() => {
    const l = server.sessionLog(sid).filter((x) => JSON.stringify(x).includes('other.lab.test') && /egress/.test(JSON.stringify(x)));
    return l.length ? l : null;
  });
  assert.ok(lines, `no egress line in the session's log: ${JSON.stringify(server.sessionLog(sid)).slice(-2000)}`);
  const line = lines.find((l) => l.type === 'egress');
  assert.ok(line, JSON.stringify(lines));
  assert.deepEqual([line.session_id, line.client_id, line.execution_id, line.decision], [sid, 'stdio', out._execution_id, 'denied'], JSON.stringify(line));

  const metricsAfter = await server.metricsText();
  const delta = (name, labels) => sample(metricsAfter, name, labels) - sample(metricsBefore, name, labels);
  assert.ok(delta('cellgate_egress_requests_total', 'decision="allowed"') >= 2, metricsAfter);
  assert.ok(delta('cellgate_egress_requests_total', 'decision="denied"') >= 1, metricsAfter);
  assert.ok(delta('cellgate_egress_bytes_total', 'direction="down"') >= 5000, metricsAfter);
  assert.ok(delta('cellgate_egress_bytes_total', 'direction="up"') > 0, metricsAfter);

  // list_sessions: the server's list for a session that asked for none, its own for one that did.
  const narrow = sc(await server.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] })).session_id;
  const sessions = sc(await server.call('list_sessions', {})).sessions;
  const mine = sessions.find((s) => s.session_id === sid);
  assert.ok(mine, JSON.stringify(sessions));
  assert.equal(mine.egress.mode, 'proxy', JSON.stringify(mine));
  assert.deepEqual([...mine.egress.allow].sort(), [...ALLOW].sort());
  assert.notEqual(mine.egress.own_list, true, JSON.stringify(mine));
  const n = sessions.find((s) => s.session_id === narrow);
  assert.deepEqual([n.egress.mode, n.egress.allow, n.egress.own_list], ['proxy', ['api.lab.test'], true], JSON.stringify(n));
});
