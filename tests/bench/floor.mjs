// The floor of a cold start: `runc run` of one command with a copy of a live cellgate
// sandbox's bundle (same root, mounts, seccomp, limits; a cgroup of its own), timed per run.

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The config.json of SERVER's newest live sandbox whose bind sources all exist, or null. */
function liveConfig(server) {
  const instances = path.join(server.stateDir, 'instances');
  let config = null;
  let newest = 0;
  for (const inst of fs.readdirSync(instances))
    for (const slot of fs.readdirSync(path.join(instances, inst, 'sessions'))) {
      const file = path.join(instances, inst, 'sessions', slot, 'bundle', 'config.json');
      if (!fs.existsSync(file) || fs.statSync(file).mtimeMs < newest) continue;
      const c = JSON.parse(fs.readFileSync(file, 'utf8'));
      // The newest live sandbox's (a one-shot's may still be going away in the background).
      if (c.mounts.every((m) => !m.source?.startsWith('/') || fs.existsSync(m.source))) {
        config = c;
        newest = fs.statSync(file).mtimeMs;
      }
    }
  return config;
}

/**
 * Runs ARGV RUNS times with `runc run` in a copy of the bundle of a live sandbox of SERVER
 * (keep one open: a session). Returns the times in ms, or null when no bundle is found.
 * Throws when the command's stdout is not EXPECT.
 */
export function floor(server, runs, argv = ['python3', '-c', 'print(1)'], expect = '1') {
  const config = liveConfig(server);
  if (!config) return null;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-floor-'));
  const root = path.join(tmp, 'runc-root');
  fs.mkdirSync(root);
  const times = [];
  try {
    for (let i = 0; i < runs; i++) {
      const id = `cgfloor-${process.pid}-${i}`;
      const bundle = path.join(tmp, `b${i}`);
      fs.mkdirSync(bundle);
      const c = structuredClone(config);
      c.process.args = argv;
      c.linux.cgroupsPath = `cellgate/${id}`;
      fs.writeFileSync(path.join(bundle, 'config.json'), JSON.stringify(c));
      const t0 = process.hrtime.bigint();
      const r = spawnSync('runc', ['--root', root, 'run', '--bundle', bundle, id], { encoding: 'utf8' });
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (r.stdout.trim() !== expect) throw new Error(`runc run: ${r.status} ${r.stdout} ${r.stderr}`);
    }
  } finally {
    try { execFileSync('runc', ['--root', root, 'list', '-q']); } catch { /* nothing left */ }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return times;
}
