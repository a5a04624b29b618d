// Hostile corpus, quota (issue 23, point 3), for every backend that can bound it
// (corpus_quota.test.mjs: oci; corpus_quota_docker.test.mjs: the Docker API through Podman): every path a sandbox can write counts against a
// limit. The ipc directory (/run/cellgate/ipc) and the package layer (/opt/cellgate/site) were
// read-write binds of plain host directories: with --workspace-mb 256 a cell wrote 1.5 GiB into
// each and the host's free space fell by as much. Here a cell finds every writable mount in its
// sandbox and writes far more than any limit into each (bounded: at most WRITE_CAP_MB and
// FILES_CAP files per path, removed after, so that a build without the limits cannot fill this
// machine's disk); each must stop with ENOSPC/EDQUOT near its own limit while the state dir's
// file system loses at most the quota. The session then still works for the agent: kernels
// start, install_package installs into /opt/cellgate/site and the package imports.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import { caseTable, py, runJson, secondSession, startCorpusServer } from './corpus.mjs';

/**
 * Registers the quota cases for BACKEND. opts: { skip: false or why it cannot run here,
 * setup: async () => ({ args: the server's backend flags, stop?: async () => {} }) }.
 */
// The session's disk (--workspace-mb; through the environment, so that a build without the
// setting still starts and fails the cases themselves), its inodes, and /tmp's size.
const WORKSPACE_MB = 64;
const WORKSPACE_INODES = 4000;
const TMP_MB = 64; // the default --tmp-mb; /dev/shm is a fixed 64 MB
const IPC_MB = 1; // the ipc directory's own tmpfs (bridge/cg_limits.h CG_IPC_TMPFS_KB)
// What a cell writes at most into one path: 8 times the quota, in files of 64 MB (under the
// default --fsize-mb). A build with a hole writes all of it; it is removed at once.
const WRITE_CAP_MB = 512;
const FILES_CAP = 50000;
// What other work on this machine may take from the same file system meanwhile.
const SLACK_MB = 48;

// Every mount a sandbox may write (oci backend, as root) and the most it may take (files:
// null where no count applies and the sandbox's memory limit bounds its inodes; notEnforced:
// no limit, and the words list_sessions' limits.not_enforced must say it with).
const DEFAULT_LIMITS = {
  '/mnt/data': { mb: WORKSPACE_MB, files: WORKSPACE_INODES + 64, disk: true },
  '/opt/cellgate/site': { mb: WORKSPACE_MB, files: WORKSPACE_INODES + 64, disk: true },
  '/run/cellgate/ipc': { mb: IPC_MB, files: 256, disk: true },
  '/tmp': { mb: TMP_MB, files: TMP_MB * 256 },
  '/dev/shm': { mb: 64, files: 16384 },
  // POSIX message queues: no bytes through write(2), a handful of queues (RLIMIT_MSGQUEUE).
  '/dev/mqueue': { mb: 0, files: 256 },
};

// Every read-write mount in the sandbox (proc, sysfs, devpts and cgroup left out) with the
// first directory in it, at most three levels down, where the sandbox user can create a file:
// { mount point: directory }.
const WRITABLE = `
import json, os
found = {}
for line in open('/proc/self/mountinfo'):
    fields, fstype = line.split(' - ')[0].split(' '), line.split(' - ')[1].split(' ')[0]
    point, options = fields[4].encode().decode('unicode_escape'), fields[5].split(',')
    if 'ro' in options or fstype in ('proc', 'sysfs', 'devpts', 'cgroup', 'cgroup2'):
        continue
    device = os.stat(point).st_dev
    for top, dirs, _ in os.walk(point):
        if os.stat(top).st_dev != device:
            dirs[:] = []
            continue
        if top[len(point):].count('/') >= 3:
            dirs[:] = []
        probe = os.path.join(top, '.quota-probe')
        try:
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError:
            continue
        os.unlink(probe)
        found[point] = top
        break
print(json.dumps(found))
`;

// Writes 1 MiB blocks into DIR/.quota-fill-<n> (64 MiB per file) until a write fails or CAP
// MiB are written; leaves the files for the host to measure (CLEAN removes them).
const FILL = (dir, capMb) => `
import errno, json, os
written, err, n = 0, None, 0
block = b'q' * (1 << 20)
try:
    while written < ${capMb} and not err:
        with open(os.path.join(${py(dir)}, '.quota-fill-%d' % n), 'wb', buffering=0) as f:
            n += 1
            for _ in range(min(64, ${capMb} - written)):
                f.write(block)
                written += 1
            os.fsync(f.fileno())
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({'mb': written, 'err': err}))
`;

// Creates empty files DIR/.quota-n<i> until one fails or CAP exist.
const MANY = (dir, cap) => `
import errno, json, os
made, err = 0, None
try:
    while made < ${cap}:
        os.close(os.open(os.path.join(${py(dir)}, '.quota-n%d' % made), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        made += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({'files': made, 'err': err}))
`;

// Writes 1 MiB blocks to the container init's stdout (the sandbox user's own pid 1) until a
// write fails or CAP MiB are written: an engine that logs it keeps it on the host's disk.
const INIT_STDOUT = (capMb) => `
import errno, json, os
written, err = 0, None
block = b'q' * (1 << 20)
try:
    fd = os.open('/proc/1/fd/1', os.O_WRONLY)
    while written < ${capMb} << 20:
        written += os.write(fd, block)
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({'mb': written >> 20, 'err': err}))
`;

const CLEAN = (dir) => `
import json, os
gone = 0
for name in os.listdir(${py(dir)}):
    if name.startswith('.quota-'):
        os.unlink(os.path.join(${py(dir)}, name)); gone += 1
print(json.dumps(gone))
`;

export function quotaSuite(backend, { skip = false, setup = async () => ({ args: [] }), limits = {}, disk = true } = {}) {
  const LIMITS = { ...DEFAULT_LIMITS, ...limits };
  if (skip) {
    test(`corpus_quota (${backend})`, { skip }, () => {});
    return;
  }
  const kase = caseTable(`corpus_quota (${backend})`);
  let server;
  let bystander;
  let work;
  let env;

  before(async () => {
    // A tiny wheel for install_package, built offline (as packages.test.mjs does).
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-quota-'));
    const wheelhouse = path.join(work, 'wheelhouse');
    const src = path.join(work, 'cgquotapkg');
    fs.mkdirSync(path.join(src, 'cgquotapkg'), { recursive: true });
    fs.mkdirSync(wheelhouse);
    fs.writeFileSync(path.join(src, 'cgquotapkg', '__init__.py'), 'def answer():\n    return 42\n');
    fs.writeFileSync(path.join(src, 'pyproject.toml'), '[build-system]\nrequires = ["setuptools"]\n'
      + 'build-backend = "setuptools.build_meta"\n\n[project]\nname = "cgquotapkg"\nversion = "0.1.0"\n');
    execFileSync('/usr/bin/python3', ['-m', 'pip', 'wheel', '--no-index', '--no-deps', '--no-build-isolation',
      '-q', '-w', wheelhouse, src], { cwd: work, stdio: 'pipe' });
    for (const p of [work, wheelhouse]) fs.chmodSync(p, 0o755);
    for (const f of fs.readdirSync(wheelhouse)) fs.chmodSync(path.join(wheelhouse, f), 0o644);
    env = await setup();
    server = await startCorpusServer({
      name: `corpus-quota-${backend}`,
      args: [...env.args, '--http-listen', 'off', '--wheelhouse', wheelhouse],
      env: { CELLGATE_WORKSPACE_MB: String(WORKSPACE_MB), CELLGATE_WORKSPACE_INODES: String(WORKSPACE_INODES) },
    });
    bystander = secondSession(server);
    await bystander.check('at start');
  });

  after(async () => {
    await server?.close();
    await env?.stop?.();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const run = (args, timeoutMs = 300000) => callExec(server.client, args, { timeoutMs });
  const ok = (r) => {
    assert.equal(sc(r).status, 'success', show(r, server));
    return sc(r);
  };

  /** Free bytes for an unprivileged writer on the file system holding the state dir. */
  function freeMb() {
    const st = fs.statfsSync(server.stateDir);
    return (st.bavail * st.bsize) / (1 << 20);
  }

  const SID = 'sess_corpusquota01';
  const filled = {};

  kase('the writable paths of a sandbox', 'only known mounts, each with a limit: ' + Object.keys(LIMITS).join(', '), async () => {
    const found = await runJson(server, { session_id: SID, code: WRITABLE });
    const all = Object.entries(found).map(([point, dir]) => (dir === point ? point : `${point} (${dir})`)).join(', ');
    filled.paths = found; // the cases below fill what was found, known or not
    const unknown = Object.keys(found).filter((p) => !(p in LIMITS));
    assert.deepEqual(unknown, [], `writable without a known limit: ${unknown.join(', ')} (all: ${all})`);
    for (const p of ['/mnt/data', '/opt/cellgate/site', '/run/cellgate/ipc', '/tmp']) assert.ok(p in found, `${p} not writable: ${all}`);
    return all;
  });

  kase(`${WRITE_CAP_MB} MB into each writable path not listed`, 'none found', async () => {
    if (!filled.paths) assert.fail('no list of writable paths');
    const seen = [];
    for (const [point, where] of Object.entries(filled.paths).filter(([p]) => !(p in LIMITS))) {
      let w;
      try {
        w = await runJson(server, { session_id: SID, timeout: 280, code: FILL(where, WRITE_CAP_MB) });
        w = `wrote ${w.mb} MB, then ${w.err ?? 'no error'}`;
      } catch (err) {
        w = `the fill ended: ${String(err.message).match(/"error_message": "([^"]*)"/)?.[1] ?? err.message.slice(0, 200)}`;
      } finally {
        await runJson(server, { session_id: SID, timeout: 120, code: CLEAN(where) });
      }
      seen.push(`${point}: ${w}`);
    }
    assert.deepEqual(seen, [], seen.join('; '));
    return 'none found';
  });

  kase(`${WRITE_CAP_MB} MB into the init's stdout (/proc/1/fd/1)`, `refused, or discarded: the host's file system (the state dir's here) loses ≤ ${SLACK_MB} MB`, async () => {
    const before = freeMb();
    const w = await runJson(server, { session_id: SID, timeout: 280, code: INIT_STDOUT(WRITE_CAP_MB) });
    const lostMb = before - freeMb();
    const observed = `wrote ${w.mb} MB, then ${w.err ?? 'no error'}; the state dir's file system lost ${lostMb.toFixed(0)} MB`;
    assert.ok(lostMb <= SLACK_MB, observed);
    return observed;
  });

  for (const dir of Object.keys(LIMITS)) {
    const limit = LIMITS[dir];
    if (limit.notEnforced) {
      kase(`${WORKSPACE_MB * 2} MB and ${WORKSPACE_INODES * 2} files into ${dir}`, `not enforced: limits.not_enforced names "${limit.notEnforced}"`, async () => {
        if (!filled.paths?.[dir]) assert.fail(`${dir} not writable`);
        let w;
        let m;
        try {
          w = await runJson(server, { session_id: SID, timeout: 280, code: FILL(filled.paths[dir], WORKSPACE_MB * 2) });
          m = await runJson(server, { session_id: SID, timeout: 280, code: MANY(filled.paths[dir], WORKSPACE_INODES * 2) });
        } finally {
          await runJson(server, { session_id: SID, timeout: 120, code: CLEAN(filled.paths[dir]) });
        }
        const notEnforced = sc(await server.call('list_sessions', {})).limits.not_enforced;
        const observed = `wrote ${w.mb} MB (${w.err ?? 'no error'}), made ${m.files} files (${m.err ?? 'no error'}); not_enforced: ${JSON.stringify(notEnforced)}`;
        assert.ok(notEnforced.some((l) => l.includes(limit.notEnforced)), observed);
        return observed;
      });
      continue;
    }
    kase(`${WRITE_CAP_MB} MB into ${dir}`, `ENOSPC/EDQUOT by ${limit.mb} MB; the state dir's file system loses ≤ ${WORKSPACE_MB} MB`, async (t) => {
      if (!filled.paths) assert.fail('no list of writable paths');
      const where = filled.paths[dir];
      if (!where) {
        t.skip(`${dir} is not writable here`);
        return 'not writable here';
      }
      const before = freeMb();
      let w;
      let lostMb;
      try {
        w = await runJson(server, { session_id: SID, timeout: 280, code: FILL(where, WRITE_CAP_MB) });
        lostMb = before - freeMb();
      } finally {
        await runJson(server, { session_id: SID, timeout: 120, code: CLEAN(where) });
      }
      filled[dir] = w.mb;
      const observed = `wrote ${w.mb} MB, then ${w.err ?? 'no error'}; the state dir's file system lost ${lostMb.toFixed(0)} MB`;
      if (limit.mb > 0) assert.ok(['ENOSPC', 'EDQUOT'].includes(w.err), observed);
      assert.ok(w.mb <= limit.mb, observed);
      assert.ok(lostMb <= WORKSPACE_MB + SLACK_MB, observed);
      return observed;
    });

    kase(`${FILES_CAP} files in ${dir}`, limit.files === null ? 'bounded by the memory limit' : `refused (ENOSPC/EDQUOT/EMFILE) by ${limit.files} files`, async (t) => {
      if (!filled.paths) assert.fail('no list of writable paths');
      const where = filled.paths[dir];
      if (!where) {
        t.skip(`${dir} is not writable here`);
        return 'not writable here';
      }
      let m;
      try {
        m = await runJson(server, { session_id: SID, timeout: 280, code: MANY(where, FILES_CAP) });
      } finally {
        await runJson(server, { session_id: SID, timeout: 120, code: CLEAN(where) });
      }
      const observed = `made ${m.files} files, then ${m.err ?? 'no error'}`;
      if (limit.files === null) return `${observed} (no count: these inodes are memory the sandbox's limit counts)`;
      assert.ok(m.err, observed);
      assert.ok(m.files <= limit.files, observed);
      return observed;
    });
  }

  kase('the workspace and the package layer share one disk', `/opt/cellgate/site takes ≤ 1 MB once /mnt/data holds the ${WORKSPACE_MB} MB`, async (t) => {
    if (!disk) {
      t.skip(`no disk of its own for ${backend}`);
      return `no disk of its own for ${backend}`;
    }
    let ws;
    let site;
    try {
      ws = await runJson(server, { session_id: SID, timeout: 280, code: FILL('/mnt/data', WORKSPACE_MB * 2) });
      site = await runJson(server, { session_id: SID, timeout: 280, code: FILL('/opt/cellgate/site/python', WORKSPACE_MB * 2) });
    } finally {
      await runJson(server, { session_id: SID, timeout: 120, code: CLEAN('/mnt/data') + CLEAN('/opt/cellgate/site/python') });
    }
    const observed = `/mnt/data ${ws.mb} MB (${ws.err}), then /opt/cellgate/site ${site.mb} MB (${site.err})`;
    assert.ok(ws.err && ['ENOSPC', 'EDQUOT'].includes(site.err) && site.mb <= 1, observed);
    return observed;
  });

  kase('a full ipc directory when a kernel starts', 'the start is refused naming /run/cellgate/ipc and its limit; after the files are removed the kernel starts', async (t) => {
    if (!disk) {
      t.skip(`no ipc tmpfs for ${backend}`);
      return `no ipc tmpfs for ${backend}`;
    }
    const sid = 'sess_corpusquotaipc';
    // 300 files (more than the ipc directory's 256 inodes), stopping at the first refusal.
    const fill = ok(await run({ language: 'bash', session_id: sid, code: 'cd /run/cellgate/ipc && for i in $(seq 300); do : > .quota-n$i 2>/dev/null || { echo "stopped at $i"; break; }; done; ls -A | wc -l' }));
    const refused = await run({ language: 'javascript', session_id: sid, code: '40 + 2' });
    const observed = `${fill.stdout.replace(/\n/g, ' ').trim()}; javascript: ${sc(refused).status} (${sc(refused).error_message})`;
    assert.equal(sc(refused).status, 'setup_error', observed);
    assert.match(sc(refused).error_message, /\/run\/cellgate\/ipc is full \(its limit: 1024 KB, 256 files\)/, observed);
    ok(await run({ language: 'bash', session_id: sid, code: 'rm -f /run/cellgate/ipc/.quota-n*' }));
    const js = ok(await run({ language: 'javascript', session_id: sid, code: '40 + 2' }));
    assert.equal(String(js.returnValue), '42', observed);
    await server.call('close_session', { session_id: sid });
    return `${observed}; after rm: javascript 42`;
  });

  kase('the session after the fills', 'bash runs, a new JavaScript kernel starts, install_package installs into the site and imports; another session answers', async () => {
    const b = ok(await run({ language: 'bash', session_id: SID, code: 'ls -A /run/cellgate/ipc | wc -l; df -k /opt/cellgate/site | tail -1' }));
    const js = ok(await run({ language: 'javascript', session_id: SID, code: '40 + 2' }));
    assert.equal(String(js.returnValue), '42');
    const inst = await server.call('install_package', { session_id: SID, package: 'cgquotapkg', language: 'python' });
    assert.ok(!inst.isError && sc(inst).success !== false, `install_package: ${JSON.stringify(inst).slice(0, 2000)}`);
    const imp = ok(await run({ language: 'python', session_id: SID, code: 'import cgquotapkg\nprint(cgquotapkg.answer(), cgquotapkg.__file__)' }));
    assert.match(imp.stdout, /^42 \/opt\/cellgate\/site\/python\/cgquotapkg\//, imp.stdout);
    await server.call('close_session', { session_id: SID });
    return `ipc holds ${b.stdout.split('\n')[0].trim()} entries; javascript 42; ${imp.stdout.trim()}; ${await bystander.check()}`;
  });
}
