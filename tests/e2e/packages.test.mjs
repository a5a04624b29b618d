// install_package through the MCP SDK client: a wheel built here with pip wheel, Debian's
// own setuptools and pip wheels, an npm tarball made with npm pack and a real npm package
// (left-pad, packed from the registry by scripts/setup.sh into tests/e2e/npm-mirror),
// served from a temporary wheelhouse and npm mirror. Installs reach the running kernel without a restart (state
// kept), stay out of other sessions unless shared, show in list_sessions, keep the
// sandbox's network off; bad names, missing packages and a missing source are refused.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer } from './lib.mjs';

// The real npm package scripts/setup.sh packs (pinned, no dependencies).
const LEFT_PAD = path.join(path.dirname(new URL(import.meta.url).pathname), 'npm-mirror', 'left-pad-1.3.0.tgz');
const haveLeftPad = fs.existsSync(LEFT_PAD);

let server;
let bare;
let work;
let wheelhouse;
let mirror;

const sc = (r) => r.structuredContent;
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 300000 });

// The sandbox user reads the sources: directories 0755, files 0644.
function openUp(dir) {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) openUp(p);
    else fs.chmodSync(p, 0o644);
  }
}

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-packages-'));
  wheelhouse = path.join(work, 'wheelhouse');
  mirror = path.join(work, 'npm-mirror');
  fs.mkdirSync(wheelhouse);
  fs.mkdirSync(mirror);
  // A pure-Python package, built into a wheel offline.
  for (const [pkg, version, answer] of [['cgtinypkg', '0.1.0', 42], ['cgsharedpkg', '2.0.1', 7]]) {
    const src = path.join(work, pkg);
    fs.mkdirSync(path.join(src, pkg), { recursive: true });
    fs.writeFileSync(path.join(src, pkg, '__init__.py'), `def answer():\n    return ${answer}\n`);
    fs.writeFileSync(
      path.join(src, 'pyproject.toml'),
      `[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n` +
        `[project]\nname = "${pkg}"\nversion = "${version}"\n`,
    );
    execFileSync('/usr/bin/python3', ['-m', 'pip', 'wheel', '--no-index', '--no-deps', '--no-build-isolation',
      '-q', '-w', wheelhouse, src], { cwd: work, stdio: 'pipe' });
  }
  // Debian's own wheels (python3-setuptools-whl, python3-pip-whl).
  for (const f of fs.readdirSync('/usr/share/python-wheels'))
    if (f.startsWith('setuptools-') || f.startsWith('pip-')) fs.copyFileSync(path.join('/usr/share/python-wheels', f), path.join(wheelhouse, f));
  // A tiny npm package, packed offline.
  const npmSrc = path.join(work, 'cg-tiny-npm');
  fs.mkdirSync(npmSrc);
  fs.writeFileSync(path.join(npmSrc, 'package.json'), JSON.stringify({ name: 'cg-tiny-npm', version: '1.2.3', main: 'index.js' }));
  fs.writeFileSync(path.join(npmSrc, 'index.js'), 'exports.hello = () => "hello from cg-tiny-npm";\n');
  execFileSync('npm', ['pack', '--silent', '--pack-destination', mirror], { cwd: npmSrc, stdio: 'pipe' });
  if (haveLeftPad) fs.copyFileSync(LEFT_PAD, path.join(mirror, path.basename(LEFT_PAD)));
  openUp(work);
  server = await startServer({ name: 'packages', args: ['--wheelhouse', wheelhouse, '--npm-mirror', mirror] });
  bare = await startServer({ name: 'packages-bare' });
});

after(async () => {
  await server?.close();
  await bare?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const send = async (sid, code) => sc(await call(server.client, 'send_to_session', { session_id: sid, code }));
const sessionLog = (sid) => {
  const file = path.join(server.stateDir, 'logs', `session-${sid}.jsonl`);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
};
const start = async (language) => sc(await call(server.client, 'start_session', { language })).session_id;

test('a wheel installed into a running Python session imports at once, state kept, nowhere else', async () => {
  const sid = await start('python');
  const other = await start('python');
  assert.equal((await send(sid, 'x = 41\nprint(x)')).stdout, '41\n');
  assert.match((await send(sid, 'import cgtinypkg')).stderr + '', /ModuleNotFoundError/);

  const r = await call(server.client, 'install_package', { session_id: sid, package: 'cgtinypkg', language: 'python' });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(sc(r).success, true);
  assert.equal(sc(r).package, 'cgtinypkg');
  assert.equal(sc(r).version, '0.1.0');
  assert.match(sc(r).install_output, /Successfully installed cgtinypkg-0\.1\.0/);

  const after = await send(sid, 'import cgtinypkg\nprint(cgtinypkg.answer(), x, cgtinypkg.__file__)');
  assert.match(after.stdout, /^42 41 \/opt\/cellgate\/site\/python\/cgtinypkg\/__init__\.py\n$/, JSON.stringify(after));
  assert.match((await send(other, 'import cgtinypkg')).stderr, /ModuleNotFoundError/);

  // Pinned, from Debian's own wheel: the session's copy comes first on the path.
  const pinned = await call(server.client, 'install_package', { session_id: sid, package: 'setuptools==66.1.1', language: 'python' });
  assert.equal(sc(pinned).version, '66.1.1', JSON.stringify(pinned));
  const st = await send(sid, 'import importlib.metadata as m\nprint(m.version("setuptools"), m.distribution("setuptools").locate_file(""))');
  assert.match(st.stdout, /^66\.1\.1 \/opt\/cellgate\/site\/python/);

  const sessions = sc(await call(server.client, 'list_sessions', {})).sessions;
  assert.deepEqual(sessions.find((s) => s.session_id === sid).packages_installed, ['cgtinypkg', 'setuptools']);
  assert.deepEqual(sessions.find((s) => s.session_id === other).packages_installed, []);

  // The session's log has a package_install line for each (seed 002's session log).
  const installs = sessionLog(sid).filter((l) => l.type === 'package_install');
  assert.deepEqual(installs.map(({ type, session_id, package: p, version, success }) => ({ type, session_id, package: p, version, success })), [
    { type: 'package_install', session_id: sid, package: 'cgtinypkg', version: '0.1.0', success: true },
    { type: 'package_install', session_id: sid, package: 'setuptools', version: '66.1.1', success: true },
  ]);
  assert.match(installs[0].at, /^\d{4}-\d\d-\d\dT/);
  assert.ok(!sessionLog(other).some((l) => l.type === 'package_install'));

  // The network stayed off: the sandbox has only its loopback interface.
  const net = sc(await call(server.client, 'execute_code', { session_id: sid, language: 'bash', code: 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "' }));
  assert.equal(net.stdout, 'lo\n');
});

test('an npm tarball installed into a running JavaScript session requires at once, state kept', async () => {
  const sid = await start('javascript');
  const first = await send(sid, 'let y = 5; y');
  assert.equal(first.status, 'success', JSON.stringify(first)); // says why when it is not
  const r = await call(server.client, 'install_package', { session_id: sid, package: 'cg-tiny-npm', language: 'node' });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(sc(r).version, '1.2.3');
  const out = await send(sid, 'console.log(require("cg-tiny-npm").hello(), y)');
  assert.equal(out.stdout, 'hello from cg-tiny-npm 5\n', JSON.stringify(out));
  const pinned = await call(server.client, 'install_package', { session_id: sid, package: 'cg-tiny-npm@1.2.3', language: 'node' });
  assert.equal(sc(pinned).version, '1.2.3', JSON.stringify(pinned));
});

test('a shared install (no session_id) is seen by new sandboxes', async () => {
  const r = await call(server.client, 'install_package', { package: 'cgsharedpkg==2.0.1', language: 'python' });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(sc(r).scope, 'shared');
  assert.equal(sc(r).version, '2.0.1');
  const once = sc(await call(server.client, 'execute_code', { language: 'python', code: 'import cgsharedpkg\nprint(cgsharedpkg.answer())' }));
  assert.equal(once.stdout, '7\n', JSON.stringify(once));
  const sid = await start('python');
  assert.equal((await send(sid, 'import cgsharedpkg\nprint(cgsharedpkg.__file__)')).stdout, '/opt/cellgate/shared/python/cgsharedpkg/__init__.py\n');
  // Read-only there: a session cannot change the shared layer.
  const write = await send(sid, 'open("/opt/cellgate/shared/python/x", "w")');
  assert.match(write.stderr, /Read-only file system|Permission denied/);
});

test('bad names are refused before anything runs', async () => {
  for (const [package_, language] of [
    ['x; rm -rf /', 'python'], ['--index-url=http://evil.example/simple', 'python'], ['../x', 'python'],
    ['https://evil.example/x.whl', 'python'], ['requests>=1', 'python'], ['a b', 'python'], ['', 'python'],
    ['x; rm -rf /', 'node'], ['../x', 'node'], ['git+https://evil.example/x.git', 'node'], ['-g', 'node'],
    ['file:/etc', 'node'], ['Upper', 'node'], ['@scope', 'node'],
  ]) {
    const r = await call(server.client, 'install_package', { package: package_, language });
    assert.equal(r.isError, true, package_);
    assert.equal(sc(r).error, 'invalid_params', `${package_}: ${JSON.stringify(r)}`);
  }
  const lang = await call(server.client, 'install_package', { package: 'x', language: 'bash' });
  assert.equal(sc(lang).error, 'invalid_params');
  const gone = await call(server.client, 'install_package', { session_id: 'sess_000000000000', package: 'x', language: 'python' });
  assert.equal(sc(gone).error, 'session_not_found');
});

test('a package not in the source says where cellgate looked', async () => {
  const sid = await start('python');
  const r = await call(server.client, 'install_package', { session_id: sid, package: 'nosuchpkg', language: 'python' });
  assert.equal(sc(r).error, 'package_not_found', JSON.stringify(r));
  assert.ok(sc(r).message.includes(wheelhouse) && sc(r).message.includes('--wheelhouse'), sc(r).message);
  const failed = sessionLog(sid).filter((l) => l.type === 'package_install');
  assert.deepEqual(failed.map(({ package: p, version, success }) => ({ package: p, version, success })),
    [{ package: 'nosuchpkg', version: null, success: false }]);
  const n = await call(server.client, 'install_package', { package: 'no-such-npm@9.9.9', language: 'node' });
  assert.equal(sc(n).error, 'package_not_found', JSON.stringify(n));
  assert.ok(sc(n).message.includes(mirror) && sc(n).message.includes('--npm-mirror'), sc(n).message);
});

test('without a source the error names the option', async () => {
  const r = await call(bare.client, 'install_package', { package: 'cgtinypkg', language: 'python' });
  assert.equal(sc(r).error, 'no_package_source');
  assert.match(sc(r).message, /--wheelhouse/);
  const n = await call(bare.client, 'install_package', { package: 'cg-tiny-npm', language: 'node' });
  assert.equal(sc(n).error, 'no_package_source');
  assert.match(sc(n).message, /--npm-mirror/);
});

test('Debian\'s own pip wheel installs into a session', async () => {
  const sid = await start('python');
  const whl = fs.readdirSync('/usr/share/python-wheels').find((f) => f.startsWith('pip-'));
  const version = whl.split('-')[1];
  const r = await call(server.client, 'install_package', { session_id: sid, package: `pip==${version}`, language: 'python' });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(sc(r).version, version);
  const out = await send(sid, 'import pip\nprint(pip.__version__, pip.__file__)');
  assert.equal(out.stdout, `${version} /opt/cellgate/site/python/pip/__init__.py\n`, JSON.stringify(out));
});

test('a real npm package (left-pad, from the set-up script\'s mirror) requires at once', { skip: !haveLeftPad && `${LEFT_PAD} is missing: run scripts/setup.sh (it packs left-pad@1.3.0 from the npm registry)` }, async () => {
  const sid = await start('javascript');
  assert.equal((await send(sid, 'let z = 9; z')).status, 'success');
  const r = await call(server.client, 'install_package', { session_id: sid, package: 'left-pad@1.3.0', language: 'node' });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(sc(r).package, 'left-pad');
  assert.equal(sc(r).version, '1.3.0');
  const out = await send(sid, 'console.log(JSON.stringify(require("left-pad")("x", 3)), z)');
  assert.equal(out.stdout, '"  x" 9\n', JSON.stringify(out));
});

test('two global installs at once: one writes the shared layer, the other is told install_busy', async () => {
  const both = await Promise.all([
    call(server.client, 'install_package', { package: 'cgtinypkg==0.1.0', language: 'python' }),
    call(server.client, 'install_package', { package: 'cgsharedpkg==2.0.1', language: 'python' }),
  ]);
  // Both asked before either answered (an install takes seconds): exactly one runs.
  const ok = both.filter((r) => !r.isError);
  const busy = both.filter((r) => r.isError);
  assert.equal(ok.length, 1, JSON.stringify(both));
  assert.equal(busy.length, 1, JSON.stringify(both));
  for (const r of busy) {
    assert.equal(sc(r).error, 'install_busy', JSON.stringify(r));
    assert.match(sc(r).message, /Another global install/);
  }
  // Asked again once the first has answered, the other goes through.
  for (const [i, r] of both.entries())
    if (r.isError) {
      const again = await call(server.client, 'install_package', { package: i ? 'cgsharedpkg==2.0.1' : 'cgtinypkg==0.1.0', language: 'python' });
      assert.equal(again.isError, false, JSON.stringify(again));
    }
  // The layer is whole: a new sandbox imports both.
  const once = sc(await call(server.client, 'execute_code', { language: 'python', code: 'import cgtinypkg, cgsharedpkg\nprint(cgtinypkg.answer(), cgsharedpkg.answer())' }));
  assert.equal(once.stdout, '42 7\n', JSON.stringify(once));
});
