// Controlled egress (issue 26), the per-session limits, each set small on one server: two
// connections at once, 1 MB up, 2 MB down, ten connections a minute. Past each, the proxy
// answers 403 with the limit's one-line reason, the request never reaches the lab, and
// another session of the same server is not affected.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, afterEach, before, test } from 'node:test';

import { show } from './lib.mjs';
import { bash, closeSessions, egressRecords, eventually, labUp, marker, probe, reasonOf, skipReason, startEgressServer } from './egress_lab.mjs';

const SKIP = skipReason();
const PER_MINUTE = 10;
let lab;
let server;

before(async () => {
  if (SKIP) return;
  lab = labUp();
  server = await startEgressServer(lab, {
    allow: ['api.lab.test'], name: 'egress-limits',
    extra: ['--egress-max-conns', '2', '--egress-max-mb-up', '1', '--egress-max-mb-down', '2', '--egress-per-minute', String(PER_MINUTE)],
  });
});

afterEach(() => closeSessions(server));

after(async () => {
  await server?.close();
  lab?.down();
});

// The request line a held connection sends, without the blank line that would end it.
const HOLDER = String.raw`nohup /usr/bin/python3 -c '
import socket, sys, time
held = []
for i in range(2):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=120)
    s.sendall(b"GET http://api.lab.test/?held HTTP/1.1\r\nHost: api.lab.test\r\n")
    held.append(s)
open("/tmp/held", "w").write("%d\n" % len(held))
time.sleep(120)
' >/tmp/holder.log 2>&1 &
echo $! > /tmp/holder.pid
for i in $(seq 200); do [ -s /tmp/held ] && break; sleep 0.1; done
cat /tmp/held /tmp/holder.log`;

test('connections at once: the third is refused with its reason while two are held; another session is not', { skip: SKIP }, async () => {
  const sid = 'sess_egressconn01';
  const held = await bash(server, sid, HOLDER, 60);
  assert.equal(held.stdout, '2\n', show(held));
  const m = marker('conns');
  const third = await probe(server, sid, `time.sleep(1)\nout(via('http://api.lab.test/?${m}-third'))`);
  assert.equal(third.status, 403, JSON.stringify(third));
  assert.match(reasonOf(third.body) ?? '', /^cellgate egress: connection limit reached \(2 at once\)/, third.body);
  const other = await probe(server, 'sess_egressconn02', `out(get('http://api.lab.test/?${m}-other'))`);
  assert.equal(other.status, 200, `another session is limited by this one's connections: ${JSON.stringify(other)}`);
  // Once the held connections close, the session connects again.
  const again = await probe(server, sid, `
import signal
os.kill(int(open('/tmp/holder.pid').read()), signal.SIGKILL)
for i in range(3):
    time.sleep(1)
    r = get('http://api.lab.test/?${m}-again')
    if r['status'] == 200: break
out(r)
`);
  assert.equal(again.status, 200, JSON.stringify(again));
  assert.deepEqual(lab.marked(`${m}-third`), [], 'the refused connection reached the lab');
});

test('bytes down: a download past 2 MB is cut, the next request refused; another session downloads', { skip: SKIP }, async () => {
  const m = marker('down');
  const out = await probe(server, 'sess_egressdown01', `
big = get('http://api.lab.test/bytes/3000000?${m}-big', keep=0)
time.sleep(1)
out({'big': big, 'next': get('http://api.lab.test/?${m}-next')})
`);
  assert.ok(out.big.status !== 200 || out.big.length === undefined || out.big.length < 3000000, `3 MB arrived whole: ${JSON.stringify(out.big)}`);
  assert.equal(out.next.status, 403, JSON.stringify(out.next));
  assert.match(reasonOf(out.next.body) ?? '', /^cellgate egress: byte limit reached/, out.next.body);
  assert.deepEqual(lab.marked(`${m}-next`), []);
  const other = await probe(server, 'sess_egressdown02', `out(get('http://api.lab.test/bytes/1500000?${m}-other', keep=0))`);
  assert.deepEqual([other.status, other.length], [200, 1500000], JSON.stringify(other));
});

test('bytes up: an upload past 1 MB is cut, the next request refused', { skip: SKIP }, async () => {
  const m = marker('up');
  const out = await probe(server, 'sess_egressup0001', `
big = get('http://api.lab.test/headers?${m}-big', method='POST', data=b'u' * 1500000, keep=100000)
time.sleep(1)
out({'big': big, 'next': get('http://api.lab.test/?${m}-next')})
`);
  if (out.big.status === 200) assert.notEqual(JSON.parse(out.big.body).body_length, 1500000, 'the whole upload arrived');
  assert.equal(out.next.status, 403, JSON.stringify(out.next));
  assert.match(reasonOf(out.next.body) ?? '', /^cellgate egress: byte limit reached/, out.next.body);
  assert.deepEqual(lab.marked(`${m}-next`), []);
});

test(`rate: past ${PER_MINUTE} connections a minute the proxy answers 403; the refused never arrive; audited`, { skip: SKIP }, async () => {
  const m = marker('rate');
  const out = await probe(server, 'sess_egressrate01', `
# ${m}
out([get('http://api.lab.test/?${m}-%d' % i) for i in range(${PER_MINUTE + 6})])
`);
  const allowed = out.filter((r) => r.status === 200).length;
  const refused = out.filter((r) => r.status === 403);
  assert.ok(refused.length >= 1, JSON.stringify(out.map((r) => r.status)));
  for (const r of refused) assert.match(reasonOf(r.body) ?? '', /^cellgate egress: rate limit reached/, r.body);
  assert.ok(allowed >= 1 && allowed <= PER_MINUTE + 1, `allowed ${allowed}`);
  assert.equal(lab.marked(m).length, allowed, 'exactly the allowed requests arrived');
  const records = await egressRecords(server, out._execution_id, m, (l) => l.some((x) => x.decision === 'denied'));
  assert.ok(records.some((x) => x.decision === 'denied' && /rate limit/.test(x.reason ?? '')), JSON.stringify(records));
});

// The proxy's processes end with the server: closed (its run dir goes too), or killed with
// SIGKILL (no clean-up ran).
function proxyChildren(pid) {
  const out = [];
  for (const p of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x)).map(Number)) {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      if (/squid|egress-relay/.test(fs.readFileSync(`/proc/${p}/cmdline`, 'utf8'))) out.push(p);
    } catch {}
  }
  return out;
}
const cmdline = (p) => {
  try {
    return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return null;
  }
};
const runDir = (pid) => `/run/cellgate/egress-${pid}`;

test('a server closed, or killed with SIGKILL, leaves no squid or relay running; closed, no run dir', { skip: SKIP }, async () => {
  const closed = await startEgressServer(lab, { allow: ['api.lab.test'], name: 'egress-closed' });
  const closedProxy = proxyChildren(closed.pid);
  assert.ok(closedProxy.length >= 2, 'squid and the relay are the server\'s children');
  assert.ok(fs.existsSync(runDir(closed.pid)), `${runDir(closed.pid)} while it runs`);
  // Live sessions, one with a list of its own, and a connection open through the proxy.
  await probe(closed, 'sess_egressclose1', `out(get('http://api.lab.test/'))`);
  await closed.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] });
  await bash(closed, 'sess_egressclose1', "nohup curl -sS -o /dev/null 'http://api.lab.test/slow?bytes=100&delay_ms=1000' >/dev/null 2>&1 & echo", 30);
  await closed.close();
  const leftClosed = await eventually(() => (closedProxy.every((p) => cmdline(p) === null) ? [] : null), 15000);
  assert.deepEqual(leftClosed ?? closedProxy.map(cmdline).filter(Boolean), [], 'still running after the server was closed');
  assert.equal(fs.existsSync(runDir(closed.pid)), false, `${runDir(closed.pid)} left after a clean stop`);

  const doomed = await startEgressServer(lab, { allow: ['api.lab.test'], name: 'egress-doomed' });
  const proxy = proxyChildren(doomed.pid);
  assert.ok(proxy.length >= 2, 'squid and the relay are the server\'s children');
  try {
    process.kill(doomed.pid, 'SIGKILL');
    const left = await eventually(() => (proxy.every((p) => cmdline(p) === null) ? [] : null), 15000);
    assert.deepEqual(left ?? proxy.map(cmdline).filter(Boolean), [], 'still running after the server was killed');
  } finally {
    for (const p of proxy) if (cmdline(p) !== null) try { process.kill(p, 'SIGKILL'); } catch {}
    await doomed.close();
    fs.rmSync(runDir(doomed.pid), { recursive: true, force: true });
  }
});

test('squid killed under a running server: the server restarts it and the next request goes through', { skip: SKIP }, async () => {
  const own = await startEgressServer(lab, { allow: ['api.lab.test'], name: 'egress-squid-killed' });
  try {
    const sid = 'sess_egresssquid1';
    const before = await probe(own, sid, `out(get('http://api.lab.test/'))`);
    assert.equal(before.status, 200, JSON.stringify(before));
    const squid = proxyChildren(own.pid).filter((p) => /squid/.test(cmdline(p) ?? ''));
    assert.equal(squid.length, 1, `one squid: ${squid.map(cmdline)}`);
    process.kill(squid[0], 'SIGKILL');
    const restarted = await eventually(() => {
      const now = proxyChildren(own.pid).filter((p) => /squid/.test(cmdline(p) ?? '') && p !== squid[0]);
      return now.length === 1 ? now : null;
    }, 15000);
    assert.ok(restarted, `no new squid: ${own.stderrText().slice(-1500)}`);
    // The line is written before the new squid starts, but this process may see the new squid
    // in /proc before it has read the server's stderr pipe: wait for the line too.
    const said = /egress: squid ended \(signal 9\); restarting it/;
    await eventually(() => said.test(own.stderrText()) || null, 15000);
    assert.match(own.stderrText(), said);
    // The relay retries a refused connection while the new squid comes up.
    const after = await probe(own, sid, `out(get('http://api.lab.test/?again'))`);
    assert.equal(after.status, 200, JSON.stringify(after));
  } finally {
    await own.close();
  }
});
