// Hostile corpus, the operator routes (issue 23, point 6): on a shared host another user
// (here `nobody`, through setpriv) reaches every loopback listener, so loopback is no
// credential. /admin/sessions and /metrics answer 401 without the admin token, on an MCP
// HTTP listener without --http-token and on a stdio server's download listener alike; the
// MCP bearer token and the gateway token do not open them; the token is a file only the
// server's user can read (0600 in the state dir), and with its content the routes work.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { sc, startHttpServer, startServer } from './lib.mjs';
import { caseTable } from './corpus.mjs';

const kase = caseTable('corpus_http_admin');
const LONG = { timeout: 120000 };
const OTHER = 'nobody';
const AS_ROOT = process.getuid() === 0;
const SKIP = AS_ROOT ? false : 'needs root, to act as another user (nobody)';

// What a request by another local user gets: METHOD URL with HEADERS (an object), sent by a
// node process running as OTHER. Returns { status, body }.
function asOther(method, url, headers = {}) {
  const script = `fetch(process.argv[1], { method: process.argv[2], headers: JSON.parse(process.argv[3]) })
    .then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })))
    .catch((e) => process.stdout.write(JSON.stringify({ status: 0, body: String(e) })))`;
  const out = execFileSync('setpriv', ['--reuid', OTHER, '--regid', OTHER === 'nobody' ? 'nogroup' : OTHER, '--clear-groups',
    process.execPath, '-e', script, url, method, JSON.stringify(headers)], { cwd: '/', timeout: 60000, env: { PATH: process.env.PATH } });
  return JSON.parse(out.toString());
}

// True when OTHER can read FILE.
function otherCanRead(file) {
  try {
    execFileSync('setpriv', ['--reuid', OTHER, '--regid', 'nogroup', '--clear-groups', 'cat', file], { cwd: '/', stdio: 'ignore', timeout: 30000 });
    return true;
  } catch {
    return false;
  }
}

// The admin token file of a server on STATEDIR: checked to be the server's (this process's
// user's), 0600, unreadable by OTHER. Returns its content.
function adminToken(stateDir) {
  const file = path.join(stateDir, 'admin-token');
  const st = fs.statSync(file);
  assert.ok(st.isFile(), `${file} is a file`);
  assert.equal(st.mode & 0o777, 0o600, `${file} is 0600 (is ${(st.mode & 0o777).toString(8)})`);
  assert.equal(st.uid, process.getuid(), `${file} belongs to the server's user`);
  assert.equal(otherCanRead(file), false, `${OTHER} cannot read ${file}`);
  const token = fs.readFileSync(file, 'utf8');
  assert.match(token, /^[0-9a-f]{64}$/);
  return token;
}

kase('an MCP HTTP listener on loopback without --http-token: another user lists and closes nobody\'s sessions only with the admin token',
  '/admin/sessions GET and DELETE and /metrics: 401 without the token, with the MCP or gateway token; 200 with the token file\'s content (0600, the server\'s)', async () => {
    const server = await startHttpServer({});
    try {
      const { client } = await server.connect();
      const made = sc(await client.callTool({ name: 'execute_code', arguments: { language: 'python', session_id: 'owned', code: 'kept = 41' } }, undefined, LONG));
      assert.equal(made.status, 'success', JSON.stringify(made));
      const gatewayToken = fs.readFileSync(path.join(server.stateDir, 'gateway-token'), 'utf8');
      const sessions = `${server.origin}/admin/sessions`;
      const metrics = `${server.origin}/metrics`;
      const observed = [];
      for (const [what, headers] of [['no token', {}], ['a wrong token', { Authorization: 'Bearer 0123456789abcdef0123456789abcdef' }],
        ['the gateway token', { Authorization: `Bearer ${gatewayToken}` }], ['the gateway token, token scheme', { Authorization: `token ${gatewayToken}` }]]) {
        const list = asOther('GET', sessions, headers);
        assert.equal(list.status, 401, `GET /admin/sessions with ${what}: ${list.body}`);
        assert.match(JSON.parse(list.body).message, /admin token/);
        const scrape = asOther('GET', metrics, headers);
        assert.equal(scrape.status, 401, `GET /metrics with ${what}: ${scrape.body}`);
        observed.push(`${what}: ${list.status}/${scrape.status}`);
      }
      // The slot is not secret (a listing shows it); without the token it closes nothing.
      const token = adminToken(server.stateDir);
      const auth = { Authorization: `Bearer ${token}` };
      const listed = asOther('GET', sessions, auth);
      assert.equal(listed.status, 200, listed.body);
      const [s] = JSON.parse(listed.body).sessions;
      assert.equal(s.session_id, 'owned');
      assert.equal(asOther('DELETE', `${sessions}/${s.slot}`, {}).status, 401);
      const still = sc(await client.callTool({ name: 'execute_code', arguments: { language: 'python', session_id: 'owned', code: 'print(kept + 1)' } }, undefined, LONG));
      assert.equal(still.stdout, '42\n', 'the session and its variables survived the refused DELETE');
      const scraped = asOther('GET', metrics, auth);
      assert.equal(scraped.status, 200);
      assert.match(scraped.body, /^cellgate_sessions 1$/m);
      const closed = asOther('DELETE', `${sessions}/${s.slot}`, auth);
      assert.equal(closed.status, 200, closed.body);
      assert.match(server.stderrText(), /admin: curl -H "Authorization: Bearer \$\(cat [^)]*\/admin-token\)"/, 'the log says how to use it');
      assert.doesNotMatch(server.stderrText(), new RegExp(token), 'the log never shows the admin token');
      return `${observed.join('; ')}; with the token: list 200, DELETE 200`;
    } finally {
      await server.close();
    }
  }, { skip: SKIP });

kase('the MCP bearer token (--http-token) does not open /admin or /metrics; --admin-token does',
  '401 with the MCP token, 200 with --admin-token', async () => {
    const mcpToken = 'mcp-client-token-0123456789';
    const admin = 'operator-admin-token-0123456789';
    const server = await startHttpServer({ args: ['--http-token', mcpToken, '--admin-token', admin] });
    try {
      for (const route of ['/admin/sessions', '/metrics']) {
        const withMcp = asOther('GET', `${server.origin}${route}`, { Authorization: `Bearer ${mcpToken}` });
        assert.equal(withMcp.status, 401, `${route} with the MCP token: ${withMcp.body}`);
        assert.equal(asOther('GET', `${server.origin}${route}`, { Authorization: `Bearer ${admin}` }).status, 200, route);
      }
      assert.equal(fs.existsSync(path.join(server.stateDir, 'admin-token')), false, 'a given token is not written');
      return 'MCP token: 401 on both; --admin-token: 200 on both';
    } finally {
      await server.close();
    }
  }, { skip: SKIP });

kase('a stdio server\'s download listener: another user gets 401 at /admin/sessions and /metrics',
  '401 without the token; 200 with the token file\'s content', async () => {
    const server = await startServer({ name: 'corpus-http-admin', args: ['--http-listen', '127.0.0.1:0'] });
    try {
      const port = server.stderrText().match(/listening on http:\/\/127\.0\.0\.1:(\d+)\//)?.[1];
      assert.ok(port, server.stderrText().slice(-2000));
      const bare = {};
      for (const route of ['/admin/sessions', '/metrics']) {
        bare[route] = asOther('GET', `http://127.0.0.1:${port}${route}`);
        assert.equal(bare[route].status, 401, `${route}: ${bare[route].body}`);
      }
      const token = adminToken(server.stateDir);
      const statuses = [];
      for (const route of ['/admin/sessions', '/metrics']) {
        const auth = asOther('GET', `http://127.0.0.1:${port}${route}`, { Authorization: `Bearer ${token}` });
        assert.equal(auth.status, 200, `${route} with the token: ${auth.body}`);
        statuses.push(`${route} ${bare[route].status}/${auth.status}`);
      }
      return statuses.join('; ');
    } finally {
      await server.close();
    }
  }, { skip: SKIP });
