// The sandbox image (issue 14, point 3): Dockerfile.kernel built by scripts/build-image.sh
// with no registry (debootstrap base, podman import, podman build; cached), run by the oci
// backend from its unpacked root file system (--image DIR) and by the docker backend
// (Podman's service) by name. Proves the sandbox sees the image, not the host: the image's
// stamp file is there, and a program the host has but the image does not (clang) is not.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { REPO_ROOT, callExec, expectStatus, serverBinary, startServer, which } from './lib.mjs';
import { podmanMissing, startPodman } from './podman.mjs';

const SKIP = podmanMissing() || (!which('debootstrap') && 'debootstrap is not installed (scripts/setup.sh test installs it)');
let image;
let rootfs;

before(() => {
  if (SKIP) return;
  // Cached: scripts/test.sh has built it before ctest; a first build takes minutes.
  const out = execFileSync(path.join(REPO_ROOT, 'scripts', 'build-image.sh'), { stdio: ['ignore', 'pipe', 'inherit'], timeout: 1800000 });
  [image, rootfs] = out.toString().trim().split('\n');
});

// What the sandbox sees: the image's stamp, whether the host-only clang is there, the
// Python and Node versions, the data stack.
const PROBE = [
  'import os, json, numpy, pandas, matplotlib, scipy, sympy',
  'stamp = open("/opt/cellgate/image-stamp").read().strip()',
  'print(json.dumps({"stamp": stamp, "clang": os.path.exists("/usr/bin/clang"), "numpy": numpy.__version__}))',
].join('\n');

async function probe(client, server) {
  const r = await callExec(client, { language: 'python', code: PROBE, session_id: 'sess_imageprobe1' });
  return JSON.parse(expectStatus(r, 'success', server).stdout);
}

async function languages(client, server) {
  const js = await callExec(client, { language: 'javascript', code: 'console.log(process.version.startsWith("v") ? "node" : "?", 6 * 7)' });
  assert.equal(expectStatus(js, 'success', server).stdout, 'node 42\n');
  const sh = await callExec(client, { language: 'bash', code: 'echo "$BASH_VERSION" | cut -c1; ls /opt/cellgate/kernels' });
  assert.equal(expectStatus(sh, 'success', server).stdout, '5\njavascript\npython\nr\n');
  const plot = await callExec(client, { language: 'python', code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()', session_id: 'sess_imageplot01' });
  expectStatus(plot, 'success', server);
  assert.ok(plot.content.find((c) => c.type === 'image' && c.mimeType === 'image/png'));
}

describe('the oci backend runs the image from its root file system', { skip: SKIP }, () => {
  let server;
  before(async () => {
    server = await startServer({ name: 'image-oci', args: ['--backend', 'oci', '--image', rootfs] });
  });
  after(async () => server?.close());

  test('Python with the data stack, JavaScript and bash come from the image, not the host', async () => {
    assert.match(server.stderrText(), new RegExp(`sandbox root: the image at ${rootfs}`));
    const seen = await probe(server.client, server);
    assert.equal(seen.stamp, fs.readFileSync(path.join(rootfs, '.cellgate-stamp'), 'utf8').trim());
    assert.equal(seen.clang, false, 'the host has clang; the image does not');
    assert.ok(fs.existsSync('/usr/bin/clang'), 'the host has clang (scripts/setup.sh test)');
    await languages(server.client, server);
  });

  test("every package the README's language table names loads in the image", async () => {
    await preinstalled(server.client, server);
  });

  test("the image's own kernel specs are offered: xpython (Debian's xeus-python) runs from it", async () => {
    const listed = await server.client.callTool({ name: 'list_sessions', arguments: {} });
    const names = listed.structuredContent.languages.map((l) => l.name);
    assert.ok(names.includes('r') && names.includes('xpython'), names.join());
    const r = await callExec(server.client, { language: 'xpython', code: 'import sys\nprint(sys.version_info[0])' });
    assert.equal(expectStatus(r, 'success', server).stdout, '3\n');
  });
});

// The README's language table says what each kernel has preinstalled (generated from
// kernels/*/kernel.json's metadata.cellgate.preinstalled, tests/docs/check.sh): every package
// it names loads in the image.
const LOADERS = {
  python: (names) => names.map((n) => `import ${n}`).join('\n') + '\nprint("loaded")',
  r: (names) => names.map((n) => `suppressPackageStartupMessages(library(${JSON.stringify(n)}, character.only = TRUE))`).join('\n') + '\ncat("loaded\\n")',
};

async function preinstalled(client, server) {
  for (const name of fs.readdirSync(path.join(REPO_ROOT, 'kernels'))) {
    const file = path.join(REPO_ROOT, 'kernels', name, 'kernel.json');
    if (!fs.existsSync(file)) continue;
    const meta = JSON.parse(fs.readFileSync(file, 'utf8')).metadata.cellgate;
    const language = meta.language ?? name;
    if (!meta.preinstalled?.length) continue;
    assert.ok(LOADERS[language], `no loader for ${language}'s preinstalled packages in this test`);
    const r = await callExec(client, { language, code: LOADERS[language](meta.preinstalled), timeout: 120 });
    assert.equal(expectStatus(r, 'success', server).stdout, 'loaded\n', `${language}: ${meta.preinstalled.join(', ')}`);
  }
}

describe('the docker backend runs the same image by name', { skip: SKIP }, () => {
  let podman;
  let server;
  before(async () => {
    podman = await startPodman();
    const args = podman.args.map((a, i, all) => (all[i - 1] === '--image' ? image : a));
    server = await startServer({ name: 'image-docker', args });
  });
  after(async () => {
    await server?.close();
    await podman?.stop();
  });

  test('the same stamp, and every language', async () => {
    const seen = await probe(server.client, server);
    assert.equal(seen.stamp, fs.readFileSync(path.join(rootfs, '.cellgate-stamp'), 'utf8').trim());
    assert.equal(seen.clang, false);
    await languages(server.client, server);
  });
});

test('--image that is not a sandbox root file system is refused at start-up', { skip: SKIP }, () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-image-empty-'));
  try {
    for (const [dir, why] of [[path.join(empty, 'missing'), /not a directory/], [empty, /no \/usr\/bin\/python3 in it/]]) {
      const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-image-state-'));
      const r = spawnSync(serverBinary(), ['mcp', '--backend', 'oci', '--image', dir, '--state-dir', state, '--http-listen', 'off'],
        { input: '', encoding: 'utf8', timeout: 30000 });
      fs.rmSync(state, { recursive: true, force: true });
      assert.notEqual(r.status, 0, r.stderr);
      assert.match(r.stderr, why, r.stderr);
    }
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

// The version and commit of the tree that built it (scripts/version.sh --labels); they are
// not in its stamp, so they name the build that last changed it, not this tree.
function checkVersionLabels(labels) {
  assert.match(labels?.['org.opencontainers.image.version'] ?? '', /^\d+\.\d+\.\d+(\+\d+\.g[0-9a-f]{12}(\.dirty)?)?$/, JSON.stringify(labels));
  assert.match(labels?.['org.opencontainers.image.revision'] ?? '', /^[0-9a-f]{40}$/, JSON.stringify(labels));
}

test('the image says which cellgate built it (OCI version and revision labels)', { skip: SKIP }, () => {
  checkVersionLabels(JSON.parse(execFileSync('podman', ['image', 'inspect', '--format', '{{json .Labels}}', image], { encoding: 'utf8' })));
});
