// The version (scripts/version.sh: CHANGELOG.md's release, +N.gHASH off a release tag) is one
// and the same in `cellgate --version`, the man page, initialize's serverInfo (on stdio and
// over HTTP) and /metrics' cellgate_build_info gauge.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, serverBinary, startHttpServer, startServer } from './lib.mjs';

const ADMIN_TOKEN = 'version-e2e-admin-token-0123456789';
const script = path.join(REPO_ROOT, 'scripts', 'version.sh');
const expected = execFileSync('sh', [script], { encoding: 'utf8' }).trim();
const revision = execFileSync('sh', [script, '--revision'], { encoding: 'utf8' }).trim();

test('scripts/version.sh: the CHANGELOG release, with +N.gHASH off a release tag', () => {
  assert.match(expected, /^\d+\.\d+\.\d+(\+\d+\.g[0-9a-f]{12}(\.dirty)?)?$/);
  assert.ok(expected.startsWith(expected.split('+')[0]));
  if (revision) assert.ok(expected === expected.split('+')[0] || expected.includes(`.g${revision.slice(0, 12)}`), `${expected} names ${revision}`);
});

test('cellgate --version and the man page say the version', () => {
  const out = execFileSync(serverBinary(), ['--version'], { encoding: 'utf8' });
  assert.equal(out, `cellgate ${expected}\n`);
  const man = execFileSync(serverBinary(), ['help', '--man'], { encoding: 'utf8' });
  assert.ok(man.includes(`.TH CELLGATE 1 "" "cellgate ${expected.replaceAll('-', '\\-')}"`), man.slice(0, 400));
});

test("initialize's serverInfo carries the version on stdio", async () => {
  const server = await startServer({ args: ['--http-listen', 'off'] });
  try {
    assert.deepEqual(
      { name: server.client.getServerVersion()?.name, version: server.client.getServerVersion()?.version },
      { name: 'cellgate', version: expected },
    );
  } finally {
    await server.close();
  }
});

test("over HTTP: serverInfo, and /metrics' cellgate_build_info gauge", async () => {
  const server = await startHttpServer({ args: ['--admin-token', ADMIN_TOKEN] });
  try {
    const { client } = await server.connect();
    assert.equal(client.getServerVersion()?.version, expected);
    const res = await fetch(`${server.origin}/metrics`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /^# TYPE cellgate_build_info gauge$/m);
    assert.ok(text.split('\n').includes(`cellgate_build_info{version="${expected}",revision="${revision}"} 1`), text.slice(0, 1500));
  } finally {
    await server.close();
  }
});
