// Errors a model can read (issue 12, point 6), through the MCP SDK client against real
// sandboxes and kernels: input() without stdin in one line, sys.exit(n) as exit_code n,
// no kernel-internal frames or file names, a timeout said once (and "state kept" only in a
// session), one unsupported-language error from every tool, no session id from a failed
// upload_file, and a closed session id said so instead of silently made again.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startServer, callExec, sc, show } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer({ name: 'errors' });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args, timeout = 120000) => client.callTool({ name, arguments: args }, undefined, { timeout });
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const python = (code, extra = {}) => callExec(client, { language: 'python', code, ...extra });
const b64 = (s) => Buffer.from(s).toString('base64');

// What the kernel's machinery looks like when it leaks into a result.
const INTERNALS = /kernelbase\.py|ipykernel|interactiveshell\.py|\/tmp\/ipykernel_|\b\d{6,}\.py|tsLastExpr|cellgate_startup/;

function assertClean(r, what) {
  for (const [where, value] of [['stderr', sc(r).stderr], ['error_message', sc(r).error_message ?? ''], ['text', text(r)]])
    assert.doesNotMatch(value, INTERNALS, `${what}: kernel internals in ${where}\n${show(r, server)}`);
}

const count = (haystack, needle) => haystack.split(needle).length - 1;

test('input() without stdin fails in one line that says to pass stdin', async () => {
  const r = await python('name = input("name? ")');
  const s = sc(r);
  assert.equal(s.status, 'execution_error', show(r, server));
  assert.equal(s.exit_code, 1);
  assert.equal(s.stderr.trim().split('\n').length, 1, `one line: ${JSON.stringify(s.stderr)}`);
  assert.match(s.stderr, /input\(\) needs stdin: pass `stdin` with the call/);
  assert.match(s.stderr, /Cell In \[\d+\], line 1/, 'where in the code');
  assert.match(s.error_message, /input\(\) needs stdin/);
  assertClean(r, 'input() without stdin');
});

test('input() past the end of stdin is an EOFError in one line; a user EOFError keeps its traceback', async () => {
  const r = await python('a = input()\nb = input()\nprint(a)', { stdin: 'only\n' });
  assert.equal(sc(r).stderr.trim(), 'EOFError: EOF when reading a line (Cell In [1], line 2)', show(r, server));
  assert.equal(sc(r).stdout, '', 'the cell stopped at the second input()');
  assertClean(r, 'input() past stdin');
  const ok = await python('print(input() + "!")', { stdin: 'hi\n' });
  assert.equal(sc(ok).stdout, 'hi!\n', show(ok, server));
  const own = await python('raise EOFError("mine")');
  assert.match(sc(own).stderr, /Traceback[\s\S]*raise EOFError\("mine"\)[\s\S]*EOFError: mine/, show(own, server));
});

test('sys.exit(n) gives exit_code n without IPython\'s warning', async () => {
  const three = await python('import sys\nprint("before")\nsys.exit(3)');
  assert.equal(sc(three).exit_code, 3, show(three, server));
  assert.equal(sc(three).status, 'execution_error');
  assert.equal(sc(three).stdout, 'before\n');
  assert.equal(sc(three).stderr, '', 'nothing on stderr, as a script');
  assert.doesNotMatch(text(three), /To exit|%tb|UserWarning/, show(three, server));

  const zero = await python('import sys\nsys.exit(0)');
  assert.equal(sc(zero).status, 'success', show(zero, server));
  assert.equal(sc(zero).exit_code, 0);
  assert.equal(zero.isError, false);
  assert.doesNotMatch(text(zero), /To exit|SystemExit/);

  const message = await python('import sys\nsys.exit("bad input file")');
  assert.equal(sc(message).exit_code, 1, show(message, server));
  assert.equal(sc(message).stderr.trim(), 'bad input file');
  assert.doesNotMatch(text(message), /To exit|%tb/);
});

test('tracebacks, warnings and SyntaxErrors show the cells, not the kernel\'s files', async () => {
  const sid = 'sess_errorsframes';
  await python('def g():\n    return 1 / 0', { session_id: sid });
  const r = await python('g()', { session_id: sid });
  assert.match(sc(r).stderr, /Cell In \[2\], line 1[\s\S]*g\(\)[\s\S]*Cell In \[1\], line 2, in g\(\)[\s\S]*return 1 \/ 0/,
    `user frames kept: ${show(r, server)}`);
  assertClean(r, 'a traceback');

  const printed = await python('import traceback\ntry:\n    g()\nexcept Exception:\n    traceback.print_exc()', { session_id: sid });
  assert.match(sc(printed).stderr, /File "Cell In \[1\]", line 2, in g/, show(printed, server));
  assertClean(printed, 'traceback.print_exc()');

  const warned = await python('import warnings\nwarnings.warn("careful")', { session_id: sid });
  assert.match(sc(warned).stderr, /Cell In \[4\]:2: UserWarning: careful/, show(warned, server));
  assertClean(warned, 'a warning');

  const syntax = await python('x = (', { session_id: sid });
  assert.match(sc(syntax).error_message, /^SyntaxError: /, show(syntax, server));
  assertClean(syntax, 'a SyntaxError');

  const library = await python('import json\njson.loads("{")', { session_id: sid });
  assert.match(sc(library).stderr, /json\/decoder\.py/, 'library frames are the user\'s to see');
  await call('close_session', { session_id: sid });
});

test('a JavaScript error does not show the code tslab compiled the cell to', async () => {
  const r = await callExec(client, { language: 'javascript', code: 'const o = null;\no.x' });
  assert.equal(sc(r).status, 'execution_error', show(r, server));
  assert.match(sc(r).stderr, /TypeError: Cannot read properties of null/);
  assert.match(sc(r).stderr, /at evalmachine/, 'the stack stays');
  assertClean(r, 'a JavaScript error');
});

test('a timeout is said once; only a session\'s says its state was kept', async () => {
  const oneShot = await python('import time\ntime.sleep(30)', { timeout: 2 });
  assert.equal(sc(oneShot).status, 'timeout', show(oneShot, server));
  assert.equal(count(text(oneShot), 'timed out after 2 seconds'), 1, show(oneShot, server));
  assert.doesNotMatch(JSON.stringify(oneShot), /state kept/, 'a one-shot sandbox keeps nothing');
  assert.match(sc(oneShot).stderr, /Execution timed out after 2 seconds/, 'seed 004: said in stderr');

  const sid = 'sess_errorstimeout';
  await python('kept = 41', { session_id: sid });
  const inSession = await python('import time\ntime.sleep(30)', { session_id: sid, timeout: 2 });
  assert.equal(sc(inSession).status, 'timeout', show(inSession, server));
  assert.equal(count(text(inSession), 'timed out after 2 seconds'), 1, show(inSession, server));
  assert.equal(count(text(inSession), 'state kept'), 1);
  assert.match(sc(inSession).error_message, /state kept/);
  const after = await python('kept + 1', { session_id: sid });
  assert.equal(sc(after).returnValue, '42');
  await call('close_session', { session_id: sid });
});

test('every tool refuses an unsupported language with the same error and message', async () => {
  const expected = /^language 'cobol' is not supported; supported: python/;
  const calls = [
    ['execute_code', { language: 'cobol', code: '1' }],
    ['start_session', { language: 'cobol' }],
    ['save_script', { name: 'x', language: 'cobol', code: '1' }],
    ['list_scripts', { language: 'cobol' }],
    ['search_scripts', { query: 'x', language: 'cobol' }],
    ['install_package', { package: 'x', language: 'cobol' }],
    ['search_execution_logs', { language: 'cobol' }],
  ];
  const messages = new Set();
  for (const [tool, args] of calls) {
    const r = await call(tool, args);
    const s = sc(r);
    assert.equal(r.isError, true, `${tool}: ${show(r)}`);
    assert.equal(s.error, 'unsupported_language', `${tool}: ${show(r)}`);
    const message = s.message ?? s.error_message;
    assert.match(message, expected, `${tool}: ${show(r)}`);
    if (s.error_code !== undefined) assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE', tool);
    assert.ok(text(r).includes(message), `${tool}: the text says it too: ${text(r)}`);
    messages.add(message);
  }
  assert.equal(messages.size, 1, `one spelling: ${[...messages].join(' | ')}`);
});

test('a failed upload_file without session_id returns no session id and leaves no session', async () => {
  const before = sc(await call('list_sessions', {})).sessions.length;
  const badName = await call('upload_file', { filename: '../escape.txt', content_base64: b64('x') });
  assert.equal(badName.isError, true, show(badName));
  assert.equal(sc(badName).session_id, undefined, show(badName));
  const badBase64 = await call('upload_file', { filename: 'data.txt', content_base64: '%%%not base64%%%' });
  assert.equal(badBase64.isError, true, show(badBase64));
  assert.equal(sc(badBase64).session_id, undefined, show(badBase64));
  assert.equal(sc(await call('list_sessions', {})).sessions.length, before, 'no session left behind');

  const good = await call('upload_file', { filename: 'data.txt', content_base64: b64('fine') });
  assert.equal(good.isError, false, show(good));
  assert.match(sc(good).session_id, /^sess_[0-9a-f]{12}$/, 'seed 004: a success makes and returns one');
  await call('close_session', { session_id: sc(good).session_id });
});

test('a closed session id says so: a new session with a notice, not silently made again', async () => {
  const sid = 'sess_errorsclosed';
  await python('state = 1', { session_id: sid });
  assert.equal(sc(await call('close_session', { session_id: sid })).status, 'closed');

  for (const [tool, args] of [
    ['execute_code', { language: 'python', code: 'print(state)', session_id: sid }],
    ['run_python', { code: 'print(state)', session_id: sid }],
    ['upload_file', { session_id: sid, filename: 'a.txt', content_base64: b64('a') }],
  ]) {
    const r = await call(tool, args);
    const s = sc(r);
    assert.match(s.notice ?? '', /sess_errorsclosed was closed \d+ s ago \(close_session\); this is a new session/, `${tool}: ${show(r)}`);
    assert.match(r.content[0].text, /\[notice\] Session sess_errorsclosed was closed/, `${tool}: the text says it too`);
    if (tool !== 'upload_file') assert.match(s.stderr, /NameError: name 'state' is not defined/, `${tool}: the old state is gone`);
    assert.equal(s.session_id, sid, tool);
    await call('close_session', { session_id: sid });
  }

  const again = await python('state = 2', { session_id: sid });
  const next = await python('print(state)', { session_id: sid });
  assert.match(sc(again).notice ?? '', /was closed/, 'closed again: noticed again');
  assert.equal(sc(next).notice, undefined, 'the notice comes once, in the first result');
  assert.equal(sc(next).stdout, '2\n', 'the new session keeps its own state');
  await call('close_session', { session_id: sid });

  const fresh = await python('print("new")', { session_id: 'sess_errorsnever' });
  assert.equal(sc(fresh).stdout, 'new\n', 'a never-used id still makes its session (seed 004)');
  assert.equal(sc(fresh).notice, undefined, 'no notice for an id never closed');
  await call('close_session', { session_id: 'sess_errorsnever' });
});
