// The OCI runtime: --runtime takes a path, a runtime with known unfixed advisories is
// named at start-up, and a path that is not runc or crun is refused clearly.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { callExec, expectStatus, serverBinary, startServer, which } from './lib.mjs';

test('--runtime PATH runs sandboxes with that binary and says which version it is', async () => {
  const runc = which('runc');
  assert.ok(runc, 'runc is installed by scripts/setup.sh');
  const version = spawnSync(runc, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
  const server = await startServer({ args: ['--runtime', runc] });
  try {
    const r = await callExec(server.client, { language: 'python', code: 'print(2+3)' });
    assert.equal(expectStatus(r, 'success', server).stdout, '5\n');
    const log = server.stderrText();
    assert.match(log, new RegExp(`sandbox runtime: runc \\S+ \\(${runc.replace(/[/.]/g, '\\$&')}\\)`));
    const [, major, minor, patch] = version.match(/(\d+)\.(\d+)\.(\d+)/).map(Number);
    const fixed = major > 1 || minor >= 4 || (minor === 3 && patch >= 3) || (minor === 2 && patch >= 8);
    // Debian 12's runc 1.1.5 lacks the November 2025 fixes: the log says so and points to --runtime.
    assert.equal(/CVE-2025-31133.*--runtime PATH/.test(log), !fixed, `advisory for ${version}:\n${log}`);
    // One line that says whether the operator must act (issue 25).
    assert.equal(/CVE-2025-31133.*no action needed/.test(log), !fixed, `advisory for ${version}:\n${log}`);
  } finally {
    await server.close();
  }
});

test('--runtime with a binary that is neither runc nor crun fails at start-up with the reason', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-rt-'));
  try {
    for (const [arg, said] of [
      ['/bin/true', /OCI runtime \/(usr\/)?bin\/true: not runc or crun/],
      ['/nonexistent/runc', /OCI runtime \/nonexistent\/runc: No such file or directory/],
      ['youki', /OCI runtime 'youki' is not on PATH or in \/usr\/sbin/],
    ]) {
      const r = spawnSync(serverBinary(), ['mcp', '--state-dir', dir, '--http-listen', 'off', '--runtime', arg], {
        input: '',
        encoding: 'utf8',
        timeout: 20000,
      });
      assert.notEqual(r.status, 0, `${arg}: must not start`);
      assert.match(r.stderr, said, `${arg}: ${r.stderr}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
