// Controlled egress (issue 26) across a session's life: a narrowed session (start_session's
// egress_allow) keeps its own list and a working proxy when the server restarts with
// --keep-sessions and adopts its sandbox; with a warm pool, a narrowed session or one-shot run
// never gets a pooled sandbox with the server's wider list, while ordinary runs do.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { serverBinary, sc, sleep } from './lib.mjs';
import { decorate, egressArgs, eventually, labUp, marker, probe, sample, skipReason, startEgressServer } from './egress_lab.mjs';

const SKIP = skipReason();
let lab;

before(() => {
  if (!SKIP) lab = labUp();
});

after(() => {
  lab?.down();
});

// A stdio server on STATE (kept between starts) with ARGS; lib.mjs's server shape.
async function startOn(state, args) {
  let stderr = '';
  const transport = new StdioClientTransport({
    command: serverBinary(), args: ['mcp', '--state-dir', state, ...args], env: { ...process.env, CELLGATE_POOL: '0' }, stderr: 'pipe',
  });
  transport.stderr?.on('data', (c) => { stderr = (stderr + c.toString('utf8')).slice(-64000); });
  const client = new Client({ name: 'egress-keep', version: '0' }, { capabilities: {} });
  await client.connect(transport, { timeout: 30000 });
  return decorate({ client, transport, stateDir: state, stderrText: () => stderr, close: () => client.close() });
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('--keep-sessions: a narrowed session keeps its list and a working proxy after the server restarts', { skip: SKIP }, async () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-egress-keep-'));
  const args = ['--keep-sessions', 'on', '--http-listen', '127.0.0.1:0', ...egressArgs(lab, ['api.lab.test', 'pypi.lab.test'])];
  let server = await startOn(state, args);
  let sid;
  try {
    sid = sc(await server.call('start_session', { language: 'python', egress_allow: ['api.lab.test'] })).session_id;
    const m = marker('keep');
    const first = await probe(server, sid, `kept = 41\nout({'api': get('http://api.lab.test/?${m}-1')['status'], 'pypi': get('http://pypi.lab.test/?${m}-1')['status']})`);
    assert.deepEqual(first, { api: 200, pypi: 403 });
    const pid = server.transport.pid;
    await server.close();
    for (let i = 0; i < 1200 && alive(pid); i++) await sleep(50);
    assert.ok(!alive(pid), 'the first server did not exit');

    server = await startOn(state, args);
    const listed = sc(await server.call('list_sessions', {})).sessions.find((s) => s.session_id === sid);
    assert.ok(listed, `the session was not adopted: ${server.stderrText().slice(-3000)}`);
    assert.deepEqual([listed.egress?.allow, listed.egress?.own_list], [['api.lab.test'], true], JSON.stringify(listed));
    const again = await probe(server, sid, `out({'kept': kept, 'api': get('http://api.lab.test/?${m}-2'), 'pypi': get('http://pypi.lab.test/?${m}-2')})`);
    assert.equal(again.kept, 41, 'the kernel was not kept');
    assert.equal(again.api.status, 200, `the adopted sandbox's proxy: ${JSON.stringify(again.api)}`);
    assert.equal(again.pypi.status, 403, JSON.stringify(again.pypi));
    assert.match(again.pypi.body ?? '', /^cellgate egress: not allowed for this session/);
    assert.deepEqual(lab.marked(m).map((r) => `${r.name} ${r.path.split('-').at(-1)}`).sort(), ['api.lab.test 1', 'api.lab.test 2']);
  } finally {
    try {
      if (sid) await server.call('close_session', { session_id: sid });
    } catch {}
    await server.close();
    const mounted = fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(state);
    if (!mounted) fs.rmSync(state, { recursive: true, force: true });
  }
});

test('with a warm pool, narrowed sessions and one-shot runs never take a pooled sandbox with the wider list', { skip: SKIP }, async () => {
  const server = await startEgressServer(lab, { allow: ['api.lab.test', 'pypi.lab.test'], name: 'egress-pool', extra: ['--pool', 'python=2'] });
  try {
    const ready = await eventually(async () => (sample(await server.metricsText(), 'cellgate_pool_sandboxes') >= 2 ? true : null), 90000);
    assert.ok(ready, `the pool did not fill: ${server.stderrText().slice(-2000)}`);
    const m = marker('pool');
    const narrow = sc(await server.call('start_session', { language: 'python', egress_allow: ['pypi.lab.test'] })).session_id;
    const inNarrow = await probe(server, narrow, `out({'api': get('http://api.lab.test/?${m}-n')['status'], 'pypi': get('http://pypi.lab.test/?${m}-n')['status']})`);
    assert.deepEqual(inNarrow, { api: 403, pypi: 200 }, 'a narrowed session reached a host its list lacks');
    const once = await probe(server, null, `out({'api': get('http://api.lab.test/?${m}-o')['status'], 'pypi': get('http://pypi.lab.test/?${m}-o')['status']})`,
      { extra: { egress_allow: ['pypi.lab.test'] } });
    assert.deepEqual(once, { api: 403, pypi: 200 }, 'a narrowed one-shot run reached a host its list lacks');
    const plain = await probe(server, null, `out({'api': get('http://api.lab.test/?${m}-p')['status'], 'pypi': get('http://pypi.lab.test/?${m}-p')['status']})`);
    assert.deepEqual(plain, { api: 200, pypi: 200 }, 'an ordinary one-shot run');
    assert.deepEqual(lab.marked(`${m}-n`).map((r) => r.name), ['pypi.lab.test']);
    assert.deepEqual(lab.marked(`${m}-o`).map((r) => r.name), ['pypi.lab.test']);
    await server.call('close_session', { session_id: narrow });
  } finally {
    await server.close();
  }
});
