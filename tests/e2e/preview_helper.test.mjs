// The image preview helper (`cellgate preview`, artifacts/cg_preview.c) locks itself down before
// it reads a byte of a sandbox's image: seen from /proc while it waits on its stdin, it runs
// under seccomp's filter mode with no_new_privs, as nobody when started as root, with only
// stdin, stdout and stderr open and its address space, files, processes and file size limited.
// Then it answers garbage with "E" and exit 1, and a bad command line with exit 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { serverBinary } from './lib.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function startHelper(args) {
  const child = spawn(serverBinary(), ['preview', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = [];
  child.stdout.on('data', (chunk) => out.push(chunk));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, output: () => Buffer.concat(out).toString('latin1') };
}

// /proc/<pid>/status once the filter is in place (polled a bounded number of times).
async function lockedStatus(pid) {
  let text = '';
  for (let i = 0; i < 250; i++) {
    try {
      text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      break; // gone
    }
    if (/^Seccomp:\s+2$/m.test(text)) return text;
    await sleep(20);
  }
  return text;
}

const limit = (limits, name) => limits.split('\n').find((line) => line.startsWith(name))?.slice(26).trim().split(/\s+/);

test('the preview helper is locked down before it reads the image', async () => {
  const helper = startHelper(['image/png', '100', '4096', '64', '5']);
  try {
    const status = await lockedStatus(helper.child.pid);
    assert.match(status, /^Seccomp:\s+2$/m, `seccomp filter mode:\n${status}`);
    assert.match(status, /^NoNewPrivs:\s+1$/m);
    if (process.getuid() === 0) assert.match(status, /^Uid:\s+65534\s+65534\s+65534\s+65534$/m, 'nobody');
    const fds = fs.readdirSync(`/proc/${helper.child.pid}/fd`).map(Number).sort((a, b) => a - b);
    assert.deepEqual(fds, [0, 1, 2], 'only stdin, stdout and stderr open');
    const limits = fs.readFileSync(`/proc/${helper.child.pid}/limits`, 'utf8');
    assert.deepEqual(limit(limits, 'Max address space').slice(0, 2), [String(64 << 20), String(64 << 20)]);
    assert.deepEqual(limit(limits, 'Max open files').slice(0, 2), ['3', '3']);
    assert.deepEqual(limit(limits, 'Max file size').slice(0, 2), ['0', '0']);
    assert.deepEqual(limit(limits, 'Max processes').slice(0, 2), ['0', '0']);
    assert.deepEqual(limit(limits, 'Max cpu time').slice(0, 1), ['5']);
    helper.child.stdin.end(Buffer.alloc(100, 0x41)); // not a PNG
    const { code } = await helper.exited;
    assert.equal(code, 1);
    assert.match(helper.output(), /^E/, 'an "E" answer saying why');
  } finally {
    helper.child.kill('SIGKILL');
  }
});

test('a bad command line is refused with exit 2 before anything is read', async () => {
  for (const args of [[], ['image/gif', '100', '4096', '64', '5'], ['image/png', '0', '4096', '64', '5'],
    ['image/png', '100', '4096', '1', '5'], ['image/png', String(1 << 30), '4096', '64', '5']]) {
    const helper = startHelper(args);
    helper.child.stdin.end();
    const { code } = await helper.exited;
    assert.equal(code, 2, `cellgate preview ${args.join(' ')}`);
  }
});
