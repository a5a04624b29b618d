// execute_code basics through the official MCP SDK client: schema, output fields, stdin, sessions, errors.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, sc, show, startServer } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer();
  client = server.client;
});

after(async () => {
  await server?.close();
});

test('tools/list has execute_code with input and output schemas', () => {
  const tool = server.tools.find((t) => t.name === 'execute_code');
  assert.ok(tool, `execute_code missing from tools/list: ${server.tools.map((t) => t.name).join(', ')}`);
  assert.equal(tool.inputSchema.type, 'object');
  assert.ok(Array.isArray(tool.inputSchema.required), 'inputSchema.required must be an array');
  for (const name of ['language', 'code']) {
    assert.ok(tool.inputSchema.required.includes(name), `inputSchema must require ${name}`);
    assert.ok(tool.inputSchema.properties?.[name], `inputSchema.properties.${name} missing`);
  }
  assert.ok(tool.outputSchema, 'execute_code must declare an outputSchema');
  assert.equal(tool.outputSchema.type, 'object');
});

test('the model is told what the sandbox has: languages, packages, no network, install_package', () => {
  const said = [client.getInstructions() ?? '', server.tools.find((t) => t.name === 'execute_code').description];
  for (const text of said) {
    for (const word of ['pandas', 'matplotlib', 'sympy', 'no network', 'install_package'])
      assert.ok(text.includes(word), `"${word}" missing from: ${text}`);
  }
  assert.match(said[0], /format 'image'/, 'read_artifact shows a chart only when asked for an image');
  // The languages are the kernel specs found (issue 27): cellgate's own first, python first,
  // then what the sandbox's root has, then bash; the instructions and the description say them.
  const languages = server.tools.find((t) => t.name === 'execute_code').inputSchema.properties.language.enum;
  assert.deepEqual(languages.slice(0, 3), ['python', 'javascript', 'r'], languages.join());
  assert.equal(languages.at(-1), 'bash');
  const words = `${languages.slice(0, -1).join(', ')} or bash`;
  assert.ok(said[0].includes(`execute_code takes ${words}`), said[0]);
  assert.ok(said[1].includes(`Run ${words} code`), said[1]);
  assert.match(said[1], /R has dplyr/);
});

test('hello world: exact stdout and every result field', async () => {
  const r = await callExec(client, { language: 'python', code: "print('Hello, World!')" });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, 'Hello, World!\n');
  assert.equal(s.stderr, '');
  assert.equal(s.exit_code, 0);
  assert.equal(s.error_code, null);
  assert.equal(s.error_message, null);
  assert.equal(s.language, 'python');
  assert.equal(typeof s.execution_time, 'number');
  assert.ok(s.execution_time >= 0, `execution_time ${s.execution_time}`);
  assert.ok(Number.isInteger(s.duration_ms) && s.duration_ms >= 0, `duration_ms ${s.duration_ms}`);
  assert.match(s.execution_id, /^exec_[0-9a-f]{12}$/);
  assert.equal(s.timed_out, false);
  assert.equal(s.kernel_restarted, false);
  assert.ok(Array.isArray(s.outputs), 'outputs must be an array');
  assert.ok(Array.isArray(r.content), 'content must be an array');
});

test("seed 000's example: input() fed from stdin", async () => {
  const r = await callExec(client, {
    language: 'python',
    code: "name = input('Enter your name: ')\nprint(f'Hello, {name}!')",
    stdin: 'Alice',
    timeout: 10,
  });
  const s = expectStatus(r, 'success', server);
  assert.ok(s.stdout.includes('Hello, Alice!'), show(r, server));
  assert.equal(s.exit_code, 0);
});

test('stdin_data is an alias of stdin', async () => {
  const r = await callExec(client, {
    language: 'python',
    code: "name = input('Enter your name: ')\nprint(f'Hello, {name}!')",
    stdin_data: 'Alice',
  });
  const s = expectStatus(r, 'success', server);
  assert.ok(s.stdout.includes('Hello, Alice!'), show(r, server));
});

test('two input() calls read two lines', async () => {
  const r = await callExec(client, {
    language: 'python',
    code: "a = input()\nb = input()\nprint(a + '|' + b)",
    stdin: 'first\nsecond\n',
  });
  const s = expectStatus(r, 'success', server);
  assert.ok(s.stdout.includes('first|second'), show(r, server));
});

test('input() past the end of stdin raises EOFError promptly', async () => {
  // A hang would end as status "timeout"; the error must come from input() itself.
  const r = await callExec(client, {
    language: 'python',
    code: "a = input()\nprint('got', a)\nb = input()\nprint('unreachable')",
    stdin: 'only\n',
    timeout: 60,
  });
  const s = expectStatus(r, 'execution_error', server);
  assert.ok(s.stderr.includes('EOFError'), show(r, server));
  assert.ok(s.stdout.includes('got only'), show(r, server));
  assert.ok(!s.stdout.includes('unreachable'), show(r, server));
  assert.equal(s.timed_out, false);
});

test('input() without any stdin fails instead of waiting', async () => {
  const r = await callExec(client, { language: 'python', code: 'input()', timeout: 60 });
  const s = expectStatus(r, 'execution_error', server);
  assert.equal(s.timed_out, false, show(r, server));
});

test('state is kept within a session', async () => {
  const sid = 'sess_e2e000000001';
  let r = await callExec(client, { language: 'python', code: 'x = 41', session_id: sid });
  let s = expectStatus(r, 'success', server);
  assert.equal(s.session_id, sid);
  r = await callExec(client, { language: 'python', code: 'print(x+1)', session_id: sid });
  s = expectStatus(r, 'success', server);
  assert.equal(s.stdout, '42\n');
  assert.equal(s.session_id, sid);
});

test('state is not kept without a session_id', async () => {
  let r = await callExec(client, { language: 'python', code: 'y=5' });
  expectStatus(r, 'success', server);
  r = await callExec(client, { language: 'python', code: 'print(y)' });
  const s = expectStatus(r, 'execution_error', server);
  assert.ok(s.stderr.includes('NameError'), show(r, server));
});

test('an exception is an execution_error with RUNTIME_ERROR', async () => {
  const r = await callExec(client, { language: 'python', code: '1/0' });
  const s = expectStatus(r, 'execution_error', server);
  assert.equal(r.isError, true);
  assert.equal(s.exit_code, 1);
  assert.equal(s.error_code, 'RUNTIME_ERROR');
  assert.ok(s.stderr.includes('ZeroDivisionError'), show(r, server));
});

test('the last expression becomes an execute_result output', async () => {
  const r = await callExec(client, { language: 'python', code: '1+1' });
  const s = expectStatus(r, 'success', server);
  const item = s.outputs.find((o) => o.type === 'execute_result');
  assert.ok(item, `no execute_result in outputs: ${show(r, server)}`);
  assert.equal(item.data['text/plain'], '2');
});

test('unsupported language is a setup_error naming python', async () => {
  const r = await callExec(client, { language: 'cobol', code: 'DISPLAY "HI".' });
  const s = expectStatus(r, 'setup_error', server);
  assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE');
  assert.equal(typeof s.error_message, 'string');
  assert.match(s.error_message, /python/i);
});

for (const timeout of [0, 301]) {
  test(`timeout ${timeout} is rejected with INVALID_PARAMS`, async () => {
    const r = await callExec(client, { language: 'python', code: "print('no')", timeout });
    const s = expectStatus(r, 'setup_error', server);
    assert.equal(r.isError, true);
    assert.equal(s.error_code, 'INVALID_PARAMS');
    assert.ok(!s.stdout?.includes('no'), 'the code must not have run');
  });
}

test('missing code is rejected with INVALID_PARAMS', async () => {
  const r = await callExec(client, { language: 'python' });
  const s = expectStatus(r, 'setup_error', server);
  assert.equal(r.isError, true);
  assert.equal(s.error_code, 'INVALID_PARAMS');
});

test('an unknown tool is an error and the server keeps answering', async () => {
  let outcome;
  try {
    const r = await client.callTool({ name: 'no_such_tool_e2e', arguments: {} }, undefined, { timeout: 30000 });
    outcome = r;
    assert.equal(r.isError, true, `unknown tool must fail: ${show(r, server)}`);
  } catch (err) {
    outcome = err;
    assert.ok(typeof err.code === 'number', `expected a JSON-RPC error, got: ${err.stack}`);
  }
  assert.ok(outcome);
  await client.ping({ timeout: 10000 });
  const r = await callExec(client, { language: 'python', code: "print('after')" });
  assert.equal(expectStatus(r, 'success', server).stdout, 'after\n');
});
