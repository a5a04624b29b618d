// Shared by the egress tests (issue 26: e2e_egress*, e2e_corpus_egress): one tests/netlab lab
// per test file (its own network namespace, 198.18.<slot>.0/28, a decoy on link-local and ULA
// addresses; never a host beyond this machine), a server with --egress proxy pointed at it
// (the lab's hosts file as the proxy's only resolver, 198.18.0.0/15 exempt from the private-
// address deny), and the probes the sandboxes run: python urllib, raw sockets to the proxy,
// and the reasons of its 403s.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO_ROOT, callExec, sc, show, startServer, which } from './lib.mjs';

export const NETLAB = path.join(REPO_ROOT, 'tests', 'netlab', 'netlab.py');
export const PROXY = 'http://127.0.0.1:3128';
export const INDEX_URL = 'http://pypi.lab.test/simple/';
export const REGISTRY_URL = 'http://registry.lab.test/';
/** Where the sandbox finds the lab's CA once uploadCa() put it there. */
export const CA_IN_SANDBOX = '/mnt/data/labca.pem';

/** Why the egress tests cannot run here (not root, no ip or openssl), or false. */
export function skipReason() {
  if (process.getuid() !== 0) return 'the egress tests need root (tests/netlab makes network namespaces)';
  for (const tool of ['ip', 'openssl']) if (!which(tool)) return `${tool} is not installed (scripts/setup.sh test)`;
  if (!fs.existsSync('/usr/bin/python3')) return '/usr/bin/python3 is missing';
  return false;
}

/**
 * Brings a lab up in a fresh temp dir (netlab.py up). Returns { dir, info, hostsFile, ca,
 * address(name), requests(name), marked(text), down() }. The dir and the files the proxy
 * reads are world-readable: squid may run as its own user.
 */
export function labUp(prefix = 'cg-egress-lab-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let info;
  try {
    info = JSON.parse(execFileSync('/usr/bin/python3', [NETLAB, 'up', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  } catch (err) {
    try {
      execFileSync('/usr/bin/python3', [NETLAB, 'down', dir], { stdio: 'ignore' });
    } catch {}
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`netlab.py up failed: ${err.stderr ?? err.message}`);
  }
  fs.chmodSync(dir, 0o755);
  for (const f of [info.hosts_file, info.ca]) fs.chmodSync(f, 0o644);
  const requests = (name) => {
    const file = info.hosts[name].log;
    if (!fs.existsSync(file)) return [];
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  };
  let down = false;
  return {
    dir,
    info,
    hostsFile: info.hosts_file,
    ca: info.ca,
    caText: fs.readFileSync(info.ca, 'utf8'),
    address: (name) => info.hosts[name].address,
    address6: (name) => info.hosts[name].address6 ?? null,
    requests,
    /** Every request any lab host logged whose path contains TEXT: [{name, ...record}]. */
    marked(text) {
      const found = [];
      for (const name of Object.keys(info.hosts)) for (const r of requests(name)) if (r.path.includes(text)) found.push({ name, ...r });
      return found;
    },
    down() {
      if (down) return;
      down = true;
      try {
        execFileSync('/usr/bin/python3', [NETLAB, 'down', dir], { stdio: 'ignore' });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The server arguments for --egress proxy on LAB with ALLOW (entries) and EXTRA args. */
export function egressArgs(lab, allow, extra = []) {
  const args = ['--egress', 'proxy', '--egress-allow', allow.join(',')];
  args.push('--test-egress-hosts-file', lab.hostsFile, '--test-egress-allow-net', '198.18.0.0/15',
    '--pip-index-url', INDEX_URL, '--npm-registry', REGISTRY_URL, ...extra);
  return args;
}

/**
 * Starts `cellgate mcp` (lib.mjs) with --egress proxy on LAB. opts: { allow, extra (more
 * args), name, env }. Adds call(tool, args, timeoutMs), pid, metricsText() and sessionLog(sid).
 */
export async function startEgressServer(lab, { allow, extra = [], name = 'egress', env = {} } = {}) {
  const server = await startServer({ name, args: ['--http-listen', '127.0.0.1:0', ...egressArgs(lab, allow, extra)], env });
  return decorate(server);
}

/** Adds call(), pid, metricsText() and sessionLog() to a lib.mjs server. */
export function decorate(server) {
  server.pid = server.transport.pid;
  server.call = (tool, args, timeoutMs = 300000) => server.client.callTool({ name: tool, arguments: args }, undefined, { timeout: timeoutMs });
  server.metricsText = async () => {
    const port = server.stderrText().match(/listening on http:\/\/127\.0\.0\.1:(\d+)/)?.[1];
    assert.ok(port, `no download listener in the log: ${server.stderrText().slice(-2000)}`);
    const admin = fs.readFileSync(path.join(server.stateDir, 'admin-token'), 'utf8').trim();
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${admin}` } });
    assert.equal(res.status, 200, 'GET /metrics');
    return res.text();
  };
  server.sessionLog = (sid) => {
    const file = path.join(server.stateDir, 'logs', `session-${sid}.jsonl`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  };
  return server;
}

/** Closes every session of SERVER but KEEP (ids): a server holds 10 at most (--max-sessions). */
export async function closeSessions(server, keep = []) {
  if (!server) return;
  const listed = sc(await server.call('list_sessions', {})).sessions ?? [];
  for (const s of listed) if (!keep.includes(s.session_id)) await server.call('close_session', { session_id: s.session_id });
}

/** The value of the sample NAME{LABELS} in Prometheus text (0 when absent). */
export function sample(text, name, labels = '') {
  const key = labels ? `${name}{${labels}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(key));
  return line === undefined ? 0 : Number(line.slice(key.length));
}

/** Puts the lab's CA into the session's workspace (CA_IN_SANDBOX). */
export async function uploadCa(server, lab, sid) {
  const r = await server.call('upload_file', { session_id: sid, filename: 'labca.pem', content_base64: Buffer.from(lab.caText).toString('base64') });
  assert.equal(r.isError, false, show(r, server));
}

/** The one-line reason of a proxy's 403 body ("cellgate egress: ..."), or null. */
export function reasonOf(body) {
  const line = String(body ?? '').split('\n').find((l) => l.startsWith('cellgate egress:'));
  return line ?? null;
}

/**
 * Python helpers every probe starts with: get(url, ...) through the sandbox's proxy settings
 * (urllib reads HTTP_PROXY/HTTPS_PROXY), raw(data) on a socket to the proxy, tunnel(host, port)
 * (a CONNECT, its status and body), via(url) (an absolute-form request
 * sent to the proxy straight, as a client ignoring NO_PROXY would), tcp(host, port) and udp(host, port) straight from the
 * sandbox (each an outcome string), and out(obj) (the last stdout line, JSON).
 */
export const PY_PRELUDE = String.raw`
import json, os, socket, ssl, sys, time, urllib.request, urllib.error
PROXY = ('127.0.0.1', 3128)
def get(url, ca=None, method='GET', data=None, headers=None, timeout=60, keep=400):
    ctx = ssl.create_default_context(cafile=ca) if ca else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            body = r.read()
            return {'status': r.status, 'body': body[:keep].decode('latin-1'), 'length': len(body)}
    except urllib.error.HTTPError as e:
        body = e.read()
        return {'status': e.code, 'body': body[:keep].decode('latin-1'), 'length': len(body)}
    except Exception as e:
        return {'status': None, 'error': type(e).__name__ + ': ' + str(e)[:300]}
def raw(data, timeout=20, keep=2000, addr=PROXY):
    s = socket.create_connection(addr, timeout=timeout)
    got = b''
    try:
        s.sendall(data)
        while len(got) < 1 << 20:
            chunk = s.recv(65536)
            if not chunk: break
            got += chunk
    except OSError as e:
        got += ('\n[socket: %s]' % type(e).__name__).encode()
    finally:
        s.close()
    return got[:keep].decode('latin-1')
def status_of(text):
    first = text.split('\r\n', 1)[0].split(' ')
    return int(first[1]) if len(first) > 1 and first[0].startswith('HTTP/') and first[1].isdigit() else None
def body_of(text):
    return text.split('\r\n\r\n', 1)[1] if '\r\n\r\n' in text else ''
def via(url, method='GET', headers='', timeout=20):
    host = url.split('/')[2]
    text = raw(('%s %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n' % (method, url, host, headers)).encode(), timeout=timeout)
    return {'status': status_of(text), 'body': body_of(text)}
def tunnel(host, port, timeout=20):
    s = socket.create_connection(PROXY, timeout=timeout)
    try:
        s.sendall(('CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port, host, port)).encode())
        got = b''
        while b'\r\n\r\n' not in got:
            chunk = s.recv(65536)
            if not chunk: break
            got += chunk
        text = got.decode('latin-1')
        head, _, rest = text.partition('\r\n\r\n')
        length = 0
        for line in head.split('\r\n')[1:]:
            if line.lower().startswith('content-length:'): length = int(line.split(':', 1)[1])
        body = rest.encode('latin-1')
        if status_of(text) != 200:
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk: break
                body += chunk
        return {'status': status_of(text), 'body': body[:2000].decode('latin-1')}
    except OSError as e:
        return {'status': None, 'error': type(e).__name__ + ': ' + str(e)}
    finally:
        s.close()
def tcp(host, port, timeout=3):
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(timeout)
    try:
        s.connect((host, port)); return 'CONNECTED'
    except OSError as e:
        return 'BLOCKED ' + (os.strerror(e.errno) if e.errno else type(e).__name__)
    finally:
        s.close()
def udp(host, port):
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.sendto(b'cglab-udp-probe', (host, port)); return 'SENT'
    except OSError as e:
        return 'BLOCKED ' + (os.strerror(e.errno) if e.errno else type(e).__name__)
    finally:
        s.close()
def reason(body):
    return next((l for l in (body or '').split('\n') if l.startswith('cellgate egress:')), None)
def out(obj):
    print(json.dumps(obj))
`;

/**
 * Runs python BODY (after PY_PRELUDE) in session SID (or a one-shot run when sid is null,
 * with extra execute_code arguments EXTRA) and returns the JSON of its last stdout line
 * (the run must succeed). Also returns the execution id as ._execution_id.
 */
export async function probe(server, sid, body, { timeout = 120, extra = {} } = {}) {
  const args = { language: 'python', code: PY_PRELUDE + body, timeout, ...extra };
  if (sid) args.session_id = sid;
  const r = await callExec(server.client, args, { timeoutMs: (timeout + 60) * 1000 });
  const s = sc(r);
  assert.equal(s.status, 'success', `probe did not run: ${show(r, server)}`);
  const last = (s.stdout ?? '').trim().split('\n').at(-1);
  let parsed;
  try {
    parsed = JSON.parse(last);
  } catch {
    assert.fail(`probe did not print JSON last: ${show(r, server)}`);
  }
  if (parsed && typeof parsed === 'object') Object.defineProperty(parsed, '_execution_id', { value: s.execution_id });
  return parsed;
}

/** Runs bash CODE in session SID; returns structuredContent (status must be success). */
export async function bash(server, sid, code, timeout = 240) {
  const args = { language: 'bash', code, timeout };
  if (sid) args.session_id = sid;
  const r = await callExec(server.client, args, { timeoutMs: (timeout + 60) * 1000 });
  const s = sc(r);
  assert.equal(s.status, 'success', `bash did not succeed: ${show(r, server)}`);
  return s;
}

/** Polls CHECK (async, returns a value or null) every 250 ms up to MS; its last value. */
export async function eventually(check, ms = 20000) {
  let v = null;
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
    v = await check();
    if (v) return v;
  }
  return check();
}

/**
 * The egress records of the execution log entry whose run had EXECUTION_ID, found with
 * search_execution_logs (and get_execution_log when the search result leaves them out);
 * polls until PRED(records) holds (the proxy's access log is read asynchronously).
 */
export async function egressRecords(server, executionId, query, pred = (l) => l.length > 0) {
  let last = null;
  const found = await eventually(async () => {
    const s = sc(await server.call('search_execution_logs', { query, limit: 50 }));
    const hit = (s.results ?? []).find((x) => x.execution_id === executionId);
    let records = hit?.egress;
    if (!Array.isArray(records)) {
      const full = await server.call('get_execution_log', { execution_id: executionId });
      const f = full.structuredContent ?? {};
      records = f.egress ?? f.entry?.egress ?? f.log?.egress;
    }
    last = { hit, records };
    return Array.isArray(records) && pred(records) ? records : null;
  }, 30000);
  assert.ok(found, `no egress records matching in the execution log entry ${executionId}: ${JSON.stringify(last).slice(0, 3000)}`);
  return found;
}

/** A unique marker for request paths, so a test can ask the lab whether one arrived. */
export function marker(label) {
  return `cgmark-${label}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
