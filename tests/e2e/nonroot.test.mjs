// A normal user (not root) who starts `cellgate mcp` or `cellgate kernel` gets one clear
// message saying that this build's sandboxes need root and how to run it from a stdio MCP
// client, and exit code 2, instead of a bare "Permission denied" on the first mkdir or
// chown. `help` and `--version` still answer. Runs the server as uid/gid 65534 (nobody)
// with setpriv (util-linux).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { serverBinary, which } from './lib.mjs';

// A copy of the binary nobody can run wherever the checkout is (a CI clone's directories
// may be closed to other users).
const binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-nonroot-bin-'));
fs.chmodSync(binDir, 0o755);
const bin = path.join(binDir, 'cellgate');
fs.copyFileSync(serverBinary(), bin);
fs.chmodSync(bin, 0o755);
after(() => fs.rmSync(binDir, { recursive: true, force: true }));

const asNobody = (args, input = '') =>
  spawnSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', bin, ...args],
    { encoding: 'utf8', input, timeout: 30000, cwd: os.tmpdir() });

test('as a normal user, mcp and kernel refuse with a clear message; help and --version answer', (t) => {
  if (!which('setpriv')) return t.skip('setpriv (util-linux) is not installed');
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-nonroot-'));
  fs.chmodSync(state, 0o777);
  try {
    for (const args of [['mcp'], ['mcp', '--state-dir', state, '--http-listen', 'off'], ['kernel', '--state-dir', state]]) {
      const r = asNobody(args);
      assert.equal(r.status, 2, `${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`cellgate ${args[0]}: sandboxes need root in this build.*uid 65534`), r.stderr);
      assert.match(r.stderr, /sudo -n/);
      assert.equal(r.stdout, '', 'nothing on stdout (it is the MCP channel)');
    }
    assert.deepEqual(fs.readdirSync(state), [], 'nothing made in the state dir');
    assert.equal(asNobody(['--version']).status, 0);
    assert.equal(asNobody(['help']).status, 0);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});
