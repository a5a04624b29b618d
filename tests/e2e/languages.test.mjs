// Every language through the MCP SDK client: success, exception, stdin, timeout and
// cancellation for python, javascript and bash; languages sharing one session's files;
// seed 000's and seed 003's acceptance examples; seed 003's files/returnValue/memoryUsedMB.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SANDBOX_UID, callExec, callExecWhenIdle, expectStatus, sc, show, sleep, startServer } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer({ name: 'languages', args: ['--http-listen', 'off', '--interrupt-grace-ms', '1500'] });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const run = (args, opts) => callExec(client, args, opts);

// Cancels an execute_code call after DELAY ms; returns the error the SDK raised (the server
// sends no response to a cancelled request).
async function cancelAfter(args, delayMs) {
  const controller = new AbortController();
  const pending = run(args, { signal: controller.signal });
  await sleep(delayMs);
  controller.abort(new Error('e2e cancel'));
  return pending.then(() => null, (e) => e);
}

test('an unsupported language is a setup_error listing the supported ones', async () => {
  const r = await run({ language: 'cobol', code: 'DISPLAY 1' });
  const s = expectStatus(r, 'setup_error', server);
  assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE');
  for (const name of ['python', 'javascript', 'bash', 'py', 'js', 'node', 'sh'])
    assert.ok(s.error_message.includes(name), `${name} in: ${s.error_message}`);
});

test('aliases select the same languages', async () => {
  for (const [language, code, out] of [
    ['py', 'print(1)', '1\n'], ['python3', 'print(2)', '2\n'], ['sh', 'echo 3', '3\n'], ['shell', 'echo 4', '4\n'],
  ]) {
    const s = expectStatus(await run({ language, code }), 'success', server);
    assert.equal(s.stdout, out, language);
  }
});

describe('python', () => {
  test("seed 003: factorial of 10 prints 3628800", async () => {
    const s = expectStatus(await run({ language: 'python', code: 'import math\nprint(math.factorial(10))' }), 'success', server);
    assert.equal(s.stdout, '3628800\n');
  });

  test('exception: execution_error with the traceback in stderr', async () => {
    const s = expectStatus(await run({ language: 'python', code: '1 / 0' }), 'execution_error', server);
    assert.equal(s.error_code, 'RUNTIME_ERROR');
    assert.match(s.stderr, /ZeroDivisionError/);
  });

  test("seed 000's example: input() with stdin Alice", async () => {
    const s = expectStatus(await run({ language: 'python', code: "name = input('Enter your name: ')\nprint(f'Hello, {name}!')", stdin: 'Alice', timeout: 10 }), 'success', server);
    assert.ok(s.stdout.includes('Hello, Alice!'), s.stdout);
  });

  test('seed 003: an infinite loop times out with a timeout message', async () => {
    const s = expectStatus(await run({ language: 'python', code: 'while True: pass', timeout: 2 }), 'timeout', server);
    assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
    assert.match(s.error_message, /timed out after 2 seconds/);
  });
});

describe('bash', () => {
  test('success: stdout, stderr, the sandbox user in /mnt/data', async () => {
    const s = expectStatus(await run({ language: 'bash', code: 'echo out; echo err >&2; pwd; id -u' }), 'success', server);
    assert.equal(s.stdout, `out\n/mnt/data\n${SANDBOX_UID}\n`);
    assert.equal(s.stderr, 'err\n');
    assert.equal(s.exit_code, 0);
  });

  test('a failing command: execution_error with its exit code', async () => {
    const s = expectStatus(await run({ language: 'bash', code: 'echo before; exit 7' }), 'execution_error', server);
    assert.equal(s.exit_code, 7);
    assert.equal(s.stdout, 'before\n');
    assert.match(s.error_message, /exited with code 7/);
    const missing = expectStatus(await run({ language: 'bash', code: 'no-such-command-here' }), 'execution_error', server);
    assert.equal(missing.exit_code, 127);
    assert.match(missing.stderr, /not found/);
  });

  test('stdin feeds read and cat', async () => {
    const s = expectStatus(await run({ language: 'bash', code: 'read first; echo "first=$first"; cat', stdin: 'one\ntwo\nthree\n' }), 'success', server);
    assert.equal(s.stdout, 'first=one\ntwo\nthree\n');
    const big = 'x'.repeat(300000);
    const c = expectStatus(await run({ language: 'bash', code: 'wc -c', stdin: big }), 'success', server);
    assert.equal(c.stdout.trim(), String(big.length), 'stdin larger than a pipe buffer');
  });

  test('timeout kills the command and what it started', async () => {
    const sid = 'sess_bashtimeout01';
    const s = expectStatus(await run({ language: 'bash', session_id: sid, code: 'sleep 1000 & while true; do echo tick; sleep 0.3; done', timeout: 2 }), 'timeout', server);
    assert.equal(s.exit_code, -1);
    assert.match(s.stdout, /^tick\n/);
    assert.match(s.stderr, /timed out after 2 seconds/);
    const ps = expectStatus(await run({ language: 'bash', session_id: sid, code: 'ps -e -o comm=' }), 'success', server);
    assert.ok(!/sleep/.test(ps.stdout), `nothing left running: ${ps.stdout}`);
    await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  });

  test('cancellation kills the command; the session keeps working', async () => {
    const sid = 'sess_bashcancel001';
    expectStatus(await run({ language: 'bash', session_id: sid, code: 'echo ready > /mnt/data/state' }), 'success', server);
    const err = await cancelAfter({ language: 'bash', session_id: sid, code: 'sleep 30; echo late > /mnt/data/late' }, 1000);
    assert.ok(err, 'the cancelled call gets no response (the SDK rejects it)');
    const after = expectStatus(await callExecWhenIdle(client, { language: 'bash', session_id: sid, code: 'cat /mnt/data/state; ls /mnt/data' }), 'success', server);
    assert.equal(after.stdout, 'ready\nstate\n');
    await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  });

  test('each call is a new process; files persist in the session', async () => {
    const sid = 'sess_bashstate0001';
    expectStatus(await run({ language: 'bash', session_id: sid, code: 'X=5; echo hello > greeting.txt' }), 'success', server);
    const s = expectStatus(await run({ language: 'bash', session_id: sid, code: 'echo "X=${X:-unset}"; cat greeting.txt' }), 'success', server);
    assert.equal(s.stdout, 'X=unset\nhello\n');
    await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  });
});

describe('javascript', () => {
  const sid = 'sess_javascript001';

  test("seed 003: sorting [3,1,4,1,5,9,2,6]; console.log and console.error", async () => {
    const r = await run({ language: 'javascript', session_id: sid, code: "console.log('sorting'); console.error('to stderr');\n[3,1,4,1,5,9,2,6].sort((a, b) => a - b)" });
    const s = expectStatus(r, 'success', server);
    assert.equal(s.stdout, 'sorting\n');
    assert.equal(s.stderr, 'to stderr\n');
    assert.deepEqual(s.returnValue, [1, 1, 2, 3, 4, 5, 6, 9], 'plain data comes back as JSON');
    assert.equal(s.outputs[0].type, 'execute_result');
  });

  test('state persists and top-level await works', async () => {
    expectStatus(await run({ language: 'js', session_id: sid, code: 'let counter = 40;' }), 'success', server);
    const s = expectStatus(await run({ language: 'node', session_id: sid, code: 'await new Promise((r) => setTimeout(r, 100));\ncounter + 2' }), 'success', server);
    assert.equal(s.returnValue, 42);
  });

  test('an uncaught exception: execution_error with the stack in stderr', async () => {
    const s = expectStatus(await run({ language: 'javascript', session_id: sid, code: "function f() { throw new TypeError('bad thing'); }\nf()" }), 'execution_error', server);
    assert.equal(s.error_code, 'RUNTIME_ERROR');
    assert.match(s.error_message, /TypeError: bad thing/);
    assert.match(s.stderr, /TypeError: bad thing/);
    assert.match(s.stderr, /\n\s+at /, 'the stack');
    // The next call runs at once (no abort window after an error).
    const after = expectStatus(await run({ language: 'javascript', session_id: sid, code: 'counter' }), 'success', server);
    assert.equal(after.returnValue, 40);
  });

  test('stdin: fs.readFileSync(0) and process.stdin with readline', async () => {
    let s = expectStatus(await run({ language: 'javascript', session_id: sid, stdin: '1\n2\n3',
      code: "const nums = require('fs').readFileSync(0, 'utf8').split('\\n').map(Number);\nconsole.log(nums.reduce((a, b) => a + b))" }), 'success', server);
    assert.equal(s.stdout, '6\n');
    s = expectStatus(await run({ language: 'javascript', session_id: sid, stdin: 'Alice\nBob\n',
      code: "const rl = require('readline').createInterface({ input: process.stdin });\nconst names = await new Promise((done) => { const got = []; rl.on('line', (l) => got.push(l)); rl.on('close', () => done(got)); });\nconsole.log(names.map((n) => `Hello, ${n}!`).join(' '))" }), 'success', server);
    assert.equal(s.stdout, 'Hello, Alice! Hello, Bob!\n');
    // Without stdin: end of file at once.
    s = expectStatus(await run({ language: 'javascript', session_id: sid, code: "require('fs').readFileSync(0, 'utf8').length" }), 'success', server);
    assert.equal(s.returnValue, 0);
  });

  test('rich display helper: HTML, PNG (an image block), JSON', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const r = await run({ language: 'javascript', session_id: sid, code: [
      "const tslab = require('tslab');",
      "tslab.display.html('<b>bold</b>');",
      `tslab.display.png(Buffer.from('${png}', 'base64'));`,
      "tslab.display.raw('application/json', { a: 1 });",
    ].join('\n') });
    const s = expectStatus(r, 'success', server);
    const types = s.outputs.filter((o) => o.type === 'display_data').map((o) => o.mime_type ?? Object.keys(o.data).find((k) => k !== 'text/plain'));
    assert.deepEqual(types, ['text/html', 'image/png', 'application/json']);
    // The PNG's bytes come once: in the image block, which its output names.
    assert.deepEqual(s.outputs[1].omitted, ['image/png']);
    assert.equal(r.content[s.outputs[1].content_index].data, png);
    assert.ok(r.content.some((c) => c.type === 'image' && c.data === png), 'PNG as an MCP image block');
  });

  test('timeout: SIGINT stops a synchronous loop and the state is kept', async () => {
    const s = expectStatus(await run({ language: 'javascript', session_id: sid, code: 'while (true) {}', timeout: 2 }), 'timeout', server);
    assert.equal(s.kernel_restarted, false);
    assert.match(s.error_message, /timed out after 2 seconds/);
    const after = expectStatus(await run({ language: 'javascript', session_id: sid, code: 'counter' }), 'success', server);
    assert.equal(after.returnValue, 40, 'state kept');
  });

  test('a loop SIGINT cannot stop (after an await): the kernel is restarted and the result says so', async () => {
    const s = expectStatus(await run({ language: 'javascript', session_id: sid, code: 'await null;\nwhile (true) {}', timeout: 2 }), 'timeout', server);
    assert.equal(s.kernel_restarted, true);
    assert.match(s.error_message, /kernel was restarted/);
    const after = expectStatus(await run({ language: 'javascript', session_id: sid, code: 'typeof counter' }), 'success', server);
    assert.equal(after.returnValue, 'undefined', 'a new kernel');
  });

  test('cancellation interrupts the cell; the session keeps working', async () => {
    expectStatus(await run({ language: 'javascript', session_id: sid, code: 'let kept = "yes";' }), 'success', server);
    const err = await cancelAfter({ language: 'javascript', session_id: sid, code: 'while (true) {}' }, 1000);
    assert.ok(err, 'the cancelled call gets no response');
    const after = expectStatus(await callExecWhenIdle(client, { language: 'javascript', session_id: sid, code: 'kept' }), 'success', server);
    assert.equal(after.returnValue, 'yes');
    await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  });
});

test('python and javascript in one session share /mnt/data', async () => {
  const id = 'sess_pyjsshared001';
  expectStatus(await run({ language: 'python', session_id: id, code: "import json\njson.dump({'from': 'python', 'n': [1, 2, 3]}, open('/mnt/data/shared.json', 'w'))" }), 'success', server);
  const js = expectStatus(await run({ language: 'javascript', session_id: id, code: [
    "const fs = require('fs');",
    "const d = JSON.parse(fs.readFileSync('/mnt/data/shared.json', 'utf8'));",
    "fs.writeFileSync('/mnt/data/reply.txt', `${d.from} sent ${d.n.reduce((a, b) => a + b)}`);",
    'd.n.length',
  ].join('\n') }), 'success', server);
  assert.equal(js.returnValue, 3);
  assert.deepEqual(js.artifacts_created, ['reply.txt']);
  const py = expectStatus(await run({ language: 'python', session_id: id, code: "print(open('/mnt/data/reply.txt').read())" }), 'success', server);
  assert.equal(py.stdout, 'python sent 6\n');
  const listed = (await client.callTool({ name: 'list_sessions', arguments: {} })).structuredContent.sessions.find((x) => x.session_id === id);
  assert.ok(listed, 'one session');
  await client.callTool({ name: 'close_session', arguments: { session_id: id } });
});

test('python and bash share one session and its /mnt/data', async () => {
  const sid = 'sess_mixedlang0001';
  expectStatus(await run({ language: 'python', session_id: sid, code: "import json\njson.dump({'n': 41}, open('/mnt/data/shared.json', 'w'))\nkept = 'python state'" }), 'success', server);
  const b = expectStatus(await run({ language: 'bash', session_id: sid, code: 'cat shared.json; echo; echo 1 >> counter' }), 'success', server);
  assert.equal(b.stdout, '{"n": 41}\n');
  const p = expectStatus(await run({ language: 'python', session_id: sid, code: "print(kept, open('/mnt/data/counter').read().strip())" }), 'success', server);
  assert.equal(p.stdout, 'python state 1\n');
  await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
});

describe("seed 003's contract", () => {
  test('files in, small text files out, returnValue, executionTimeMs, memoryUsedMB', async () => {
    const sid = 'sess_seed003files1';
    const r = await run({
      language: 'python',
      session_id: sid,
      files: { 'data/in.txt': 'three\nlines\nhere\n', 'blob.bin': { content_base64: Buffer.from([0, 1, 2, 255]).toString('base64') } },
      code: [
        "lines = open('/mnt/data/data/in.txt').read().split()",
        "blob = open('/mnt/data/blob.bin', 'rb').read()",
        "open('/mnt/data/out.txt', 'w').write(f'{len(lines)} lines, {len(blob)} bytes')",
        "open('/mnt/data/out.bin', 'wb').write(bytes(range(256)))",
        "{'lines': len(lines), 'ok': True}",
      ].join('\n'),
    });
    const s = expectStatus(r, 'success', server);
    assert.deepEqual(s.files, { 'out.txt': '3 lines, 4 bytes' }, 'binary files and the inputs are not returned');
    assert.deepEqual(s.returnValue, { lines: 3, ok: true });
    assert.equal(typeof s.executionTimeMs, 'number');
    assert.ok(s.memoryUsedMB > 1 && s.memoryUsedMB < 2048, `memoryUsedMB ${s.memoryUsedMB}`);
    assert.equal(s.success, true);

    // A JSON return value comes back as JSON.
    const j = expectStatus(await run({ language: 'python', session_id: sid, code: "from IPython.display import JSON\nJSON({'a': [1, 2]})" }), 'success', server);
    assert.deepEqual(j.returnValue, { a: [1, 2] });
    await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  });

  test('bad files are refused before anything runs', async () => {
    for (const files of [{ '../escape': 'x' }, { '/etc/passwd': 'x' }, { 'a.txt': 5 }, { 'b.bin': { content_base64: '!!' } }, ['x']]) {
      const s = expectStatus(await run({ language: 'python', code: 'print(1)', files }), 'setup_error', server);
      assert.equal(s.error_code, 'INVALID_PARAMS', JSON.stringify(files));
    }
  });
});

test("seed 001's tool under --tool-profile seed001", async () => {
  const seed = await startServer({ name: 'seed001', args: ['--tool-profile', 'seed001', '--http-listen', 'off'] });
  try {
    const names = seed.tools.map((t) => t.name);
    assert.ok(names.includes('code_execution_sandbox.execute_code'), names.join(', '));
    assert.ok(!names.includes('execute_code'), 'no duplicate execute_code in this profile');
    const tool = seed.tools.find((t) => t.name === 'code_execution_sandbox.execute_code');
    assert.deepEqual(Object.keys(tool.inputSchema.properties).sort(), ['code', 'language', 'stdin_data', 'timeout_ms']);
    assert.equal(tool.inputSchema.properties.timeout_ms.default, 5000);
    assert.deepEqual(tool.outputSchema.required, ['stdout', 'stderr', 'exit_code', 'status', 'duration_ms']);
    const call = (args) => seed.client.callTool({ name: 'code_execution_sandbox.execute_code', arguments: args }, undefined, { timeout: 120000 });

    let s = sc(await call({ language: 'python', code: "for i in range(3): print(f'Count: {i}')" }));
    assert.equal(s.status, 'completed');
    assert.equal(s.stdout, 'Count: 0\nCount: 1\nCount: 2\n');
    assert.ok(Number.isInteger(s.duration_ms));
    s = sc(await call({ language: 'bash', code: 'read x; echo "got $x"', stdin_data: 'data' }));
    assert.equal(s.stdout, 'got data\n');
    s = sc(await call({ language: 'python', code: 'raise KeyError(1)' }));
    assert.equal(s.status, 'error_runtime');
    assert.equal(s.error_code, 'RUNTIME_ERROR');
    s = sc(await call({ language: 'cobol', code: 'x' }));
    assert.equal(s.status, 'error_setup');
    assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE');
    // The default timeout is 5 s.
    s = sc(await call({ language: 'python', code: 'import time\ntime.sleep(60)' }));
    assert.equal(s.status, 'timeout');
    assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
    assert.match(s.error_message, /timed out after 5 seconds/);
  } finally {
    await seed.close();
  }
});
