// Output with unusual bytes (issue 9, finding 8): a NUL or an invalid UTF-8 byte costs
// only itself (U+FFFD in the result), never the rest of the output, in every language;
// the saved full-output file keeps the raw bytes.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, startServer } from './lib.mjs';

const R = '\uFFFD';
let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.close();
});

const run = async (language, code, extra = {}) =>
  expectStatus(await callExec(server.client, { language, code, session_id: 'bytes', ...extra }), 'success', server);

test('python: a NUL in one print keeps every other line', async () => {
  const s = await run('python', "print('a'); print('b\\x00c'); print('d')");
  assert.equal(s.stdout, `a\nb${R}c\nd\n`);
});

test('python: a NUL on stderr', async () => {
  const s = await run('python', "import sys; sys.stderr.write('e\\x00f\\n'); print('after')");
  assert.equal(s.stderr, `e${R}f\n`);
  assert.equal(s.stdout, 'after\n');
});

test('python: a lone surrogate (undecodable bytes) and an invalid byte written to fd 1', async () => {
  // ipykernel's JSON carries the surrogate as a "\\udcff" escape, which a strict parser refuses.
  const s = await run('python', "print('x\\udcffy'); print('ok'); import os, sys; sys.stdout.flush(); os.write(1, b'a\\xffb\\n')");
  assert.ok(s.stdout.startsWith(`x${R}y\nok\n`), JSON.stringify(s.stdout));
});

test('javascript: a NUL in console.log', async () => {
  const s = await run('javascript', "console.log('a'); console.log('b\\u0000c'); console.log('d')");
  assert.equal(s.stdout, `a\nb${R}c\nd\n`);
});

test('javascript: a lone surrogate', async () => {
  const s = await run('javascript', "console.log('x\\udcffy'); console.log('ok')");
  assert.equal(s.stdout, `x${R}y\nok\n`);
});

test('bash: a NUL keeps the output and the exit code', async () => {
  const s = await run('bash', "printf 'a\\nb\\0c\\nd\\n'");
  assert.equal(s.stdout, `a\nb${R}c\nd\n`);
  assert.equal(s.exit_code, 0);
});

test('bash: one invalid UTF-8 byte costs only itself', async () => {
  const s = await run('bash', "printf 'caf\\xc3\\xa9 \\xff ok\\n'; printf 'err \\xfe\\n' >&2");
  assert.equal(s.stdout, `café ${R} ok\n`);
  assert.equal(s.stderr, `err ${R}\n`);
});

test('bash: a cut output with invalid bytes keeps the raw bytes in its saved file', async () => {
  const s = await run('bash', "head -c 150000 /dev/zero | tr '\\0' 'x'; printf '\\xff\\n'");
  assert.equal(s.stdout_truncated, true);
  assert.ok(s.stdout.endsWith(`x${R}\n`), s.stdout.slice(-20));
  const raw = await run('bash', `tail -c 2 ${s.stdout_file} | od -An -tx1`);
  assert.equal(raw.stdout.trim(), 'ff 0a');
});
