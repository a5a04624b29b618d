// The state dir's format (bridge/cg_state.c): a state dir written by the previous release,
// 0.1.0 (tests/state/0.1.0, made by tests/state/make-fixture.mjs with that release's binary),
// is read by this one: its execution log found and read, its saved script listed and run, its
// tokens kept, and it is brought to format 1 (the format file written, the step logged, once).
// A state dir of a newer format is refused with a clear message and left as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { REPO_ROOT, serverBinary, sc } from './lib.mjs';

const FIXTURE = path.join(REPO_ROOT, 'tests', 'state', '0.1.0');
// The fixture's runs are from 2026-11-27: kept whatever the day the test runs.
const KEEP_LOGS = ['--log-retention-success-days', '36500', '--log-retention-failed-days', '36500',
  '--log-retention-session-days', '36500'];

function copyFixture() {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-state-'));
  fs.cpSync(FIXTURE, state, { recursive: true });
  // git keeps no modes: 0.1.0 made its tokens 0600 (a token file others can read is replaced).
  for (const token of ['admin-token', 'gateway-token']) fs.chmodSync(path.join(state, token), 0o600);
  return state;
}

async function connect(state) {
  let stderr = '';
  const transport = new StdioClientTransport({
    command: serverBinary(), args: ['mcp', '--state-dir', state, ...KEEP_LOGS], stderr: 'pipe', env: process.env,
  });
  transport.stderr?.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'cellgate-e2e-state', version: '0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const call = async (client, name, args) => sc(await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 }));

test("0.1.0's state dir: its log, scripts and tokens are read, and it is brought to format 1", async () => {
  const state = copyFixture();
  const token = fs.readFileSync(path.join(FIXTURE, 'admin-token'), 'utf8');
  try {
    const { client, stderr } = await connect(state);
    try {
      const version = client.getServerVersion().version;
      const found = await call(client, 'search_execution_logs', { query: 'token-run-one' });
      assert.equal(found.results.length, 1, JSON.stringify(found));
      assert.equal(found.results[0].session_id, 'sess_release010');
      const entry = await call(client, 'get_execution_log', { execution_id: found.results[0].execution_id });
      assert.match(JSON.stringify(entry), /x = 41/);
      assert.match(JSON.stringify(entry), /token-run-one 42/);
      const all = await call(client, 'search_execution_logs', { query: 'token' });
      assert.equal(all.results.length, 3, 'the three runs 0.1.0 logged');

      const scripts = await call(client, 'list_scripts', {});
      assert.deepEqual(scripts.scripts.map((s) => [s.name, s.description]), [['release_hello', 'saved by 0.1.0']]);
      const ran = await call(client, 'run_script', { name: 'release_hello' });
      assert.equal(ran.stdout, 'token-script\n', JSON.stringify(ran));

      const format = JSON.parse(fs.readFileSync(path.join(state, 'format'), 'utf8'));
      assert.deepEqual(format, { format: 1, written_by: version });
      assert.equal(fs.statSync(path.join(state, 'format')).mode & 0o777, 0o600);
      assert.match(stderr(), /state dir .*: format 0 to 1: a state dir of cellgate 0\.1\.0/);
      assert.equal(fs.readFileSync(path.join(state, 'admin-token'), 'utf8'), token, 'the admin token kept');
    } finally {
      await client.close();
    }
    const again = await connect(state);
    try {
      assert.equal((await call(again.client, 'list_scripts', {})).scripts.length, 1);
      assert.doesNotMatch(again.stderr(), /format 0 to 1/, 'migrated once');
    } finally {
      await again.client.close();
    }
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});

test('a state dir of a newer format is refused, named, and left as it was', () => {
  const state = copyFixture();
  try {
    const text = '{"format": 99, "written_by": "9.9.9"}';
    fs.writeFileSync(path.join(state, 'format'), text);
    const before = fs.readdirSync(state).sort();
    const r = spawnSync(serverBinary(), ['mcp', '--state-dir', state], { input: '', encoding: 'utf8', timeout: 60000 });
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, /state dir .* has format 99, written by cellgate 9\.9\.9; this cellgate \(.*\) reads formats up to 1 and leaves it alone/);
    assert.equal(r.stdout, '');
    assert.deepEqual(fs.readdirSync(state).sort(), before, 'nothing made in it');
    assert.equal(fs.readFileSync(path.join(state, 'format'), 'utf8'), text);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});
