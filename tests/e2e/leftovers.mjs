// What a server instance left on the host (leaks.test.mjs, tests/soak): its containers,
// processes, cgroups, mounts and loop devices, and directories.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const readText = (file) => { try { return fs.readFileSync(file, 'utf8'); } catch { return null; } };
export const listDir = (dir) => { try { return fs.readdirSync(dir); } catch { return []; } };

/**
 * Everything of server instance INSTANCE on STATE that still exists, in five kinds:
 * containers (runc list under the state's runtime root), processes (in one of its cgroups,
 * or naming one of its containers or its directory: kernels, catatonit, runc init, runc
 * exec), cgroups (<hierarchy>/cellgate/cg-<instance>-* in every hierarchy, v1 and v2),
 * mounts (mountinfo entries and loop devices below its directory) and dirs (its instance
 * directory and runc state dirs; for a live instance, KEEP excepted, its session dirs).
 * opts: { live: the instance's server runs (its own dir and lock are then expected),
 * keep: session slots that belong to live sessions }.
 */
export function leftovers(state, instance, { live = false, keep = [] } = {}) {
  const prefix = `cg-${instance}-`;
  const instanceDir = path.join(state, 'instances', instance);
  const root = path.join(state, 'runtime-runc');
  const kept = (name) => keep.some((slot) => name.endsWith(slot));
  const found = { containers: [], processes: [], cgroups: [], mounts: [], dirs: [] };
  if (fs.existsSync(root)) {
    const list = JSON.parse(execFileSync('runc', ['--root', root, 'list', '--format', 'json'], { encoding: 'utf8' }) || '[]') ?? [];
    found.containers = list.map((c) => c.id).filter((id) => id.startsWith(prefix) && !kept(id));
    found.dirs.push(...listDir(root).filter((id) => id.startsWith(prefix) && !kept(id)).map((id) => path.join(root, id)));
  }
  for (const pid of listDir('/proc').filter((p) => /^\d+$/.test(p))) {
    const cgroup = readText(`/proc/${pid}/cgroup`) ?? '';
    const cmdline = (readText(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ');
    const mine = cgroup.split('\n').some((line) => line.includes(`/cellgate/${prefix}`) && !kept(line))
      || ((cmdline.includes(prefix) || cmdline.includes(instanceDir + '/')) && !keep.some((slot) => cmdline.includes(slot)));
    if (mine) found.processes.push(`${pid} ${cmdline.trim()}`);
  }
  for (const hierarchy of ['', ...listDir('/sys/fs/cgroup')]) {
    const dir = path.join('/sys/fs/cgroup', hierarchy, 'cellgate');
    for (const name of listDir(dir))
      if (name.startsWith(prefix) && !kept(name)) found.cgroups.push(path.join(dir, name));
  }
  for (const line of (readText('/proc/self/mountinfo') ?? '').split('\n')) {
    const point = (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    if (point.startsWith(instanceDir + '/') && !kept(point.split('/sessions/')[1]?.split('/')[0] ?? ''))
      found.mounts.push(point);
  }
  for (const loop of listDir('/sys/block').filter((d) => d.startsWith('loop'))) {
    const backing = (readText(`/sys/block/${loop}/loop/backing_file`) ?? '').trim();
    if (backing.startsWith(instanceDir + '/') && !keep.some((slot) => backing.includes(`/${slot}/`)))
      found.mounts.push(`/dev/${loop} -> ${backing}`);
  }
  if (!live && fs.existsSync(instanceDir)) found.dirs.push(instanceDir);
  if (live)
    found.dirs.push(...listDir(path.join(instanceDir, 'sessions')).filter((slot) => !keep.includes(slot))
      .map((slot) => path.join(instanceDir, 'sessions', slot)));
  return found;
}
