#!/usr/bin/env node
// The soak's long run (issue 30; docs/benchmarks.md): tests/soak/soak.mjs with 50 sessions x
// 200 cells over 30 minutes in 6 phases, every fault several times; any argument given
// replaces its default (--minutes 10 for a shorter run). Prints calls, faults, answer-time
// percentiles, the loop pinger, RSS/fd/thread curves, lost and mixed counts; exits 1 when an
// invariant broke. CELLGATE_BIN: the binary (default build/cellgate).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const defaults = { '--seed': '1', '--sessions': '50', '--cells': '200', '--minutes': '30', '--phases': '6', '--parallel': '6' };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) delete defaults[args[i]];
const soak = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'soak', 'soak.mjs');
const run = spawnSync(process.execPath, [soak, ...Object.entries(defaults).flat(), ...args], { stdio: 'inherit' });
process.exit(run.status ?? 1);
