// Seed 003's calculator through the MCP SDK client: `calculate` evaluates math.js-style
// expressions with SymPy in a one-shot sandbox and answers {expression, result, steps?} in
// math.js notation (the seed's scenario: the derivative of x^3 + 2x^2 is "3x^2 + 4x");
// bad, hostile and over-long expressions are refused with a clear error, the hostile ones
// before anything runs; and the evaluator runs inside the sandbox, not on the host.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO_ROOT, startServer } from './lib.mjs';

let server;

const calc = (client, expression) =>
  client.callTool({ name: 'calculate', arguments: { expression } }, undefined, { timeout: 120000 });

async function result(expression, client = server.client) {
  const r = await calc(client, expression);
  assert.equal(r.isError, false, `${expression}: ${JSON.stringify(r.structuredContent)}`);
  assert.equal(r.structuredContent.expression, expression);
  return r.structuredContent;
}

async function refusal(expression, error) {
  const r = await calc(server.client, expression);
  const s = r.structuredContent;
  assert.equal(r.isError, true, `${expression}: ${JSON.stringify(s)}`);
  assert.equal(s.error, error, `${expression}: ${JSON.stringify(s)}`);
  assert.equal(s.expression, expression);
  assert.equal(s.result, `Error: ${s.message}`, "seed 003's error shape: result 'Error: ...'");
  assert.equal(r.content[0].text, s.message);
  return s;
}

before(async () => {
  server = await startServer({ name: 'calculate-e2e' });
});

after(async () => {
  await server?.close();
});

test('tools/list has calculate with seed 003 input and output fields', () => {
  const tool = server.tools.find((t) => t.name === 'calculate');
  assert.ok(tool, 'calculate is listed in the default profile');
  assert.deepEqual(tool.inputSchema.required, ['expression']);
  assert.equal(tool.inputSchema.properties.expression.maxLength, 1000);
  for (const field of ['expression', 'result', 'steps']) assert.ok(tool.outputSchema.properties[field], field);
  assert.equal(tool.annotations.readOnlyHint, true);
});

test("seed 003's scenario: the derivative of x^3 + 2x^2 is 3x^2 + 4x", async () => {
  const r = await calc(server.client, 'derivative(x^3 + 2x^2, x)');
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.result, '3x^2 + 4x');
  assert.equal(r.structuredContent.expression, 'derivative(x^3 + 2x^2, x)');
  assert.equal(r.content[0].text, '3x^2 + 4x');
});

test('arithmetic gives a JSON number; an inexact one says its exact form in steps', async () => {
  assert.strictEqual((await result('2 + 3*4')).result, 14);
  assert.strictEqual((await result('2^10 - 3(4 + 1)')).result, 1009);
  const third = await result('1/3');
  assert.equal(typeof third.result, 'number');
  assert.equal(third.result, 0.333333333333333, '15 significant digits');
  assert.deepEqual(third.steps, ['exact: 1/3']);
  assert.ok(Math.abs((await result('sqrt(2) * pi')).result - Math.SQRT2 * Math.PI) < 1e-12);
});

test('solve, integrate (indefinite and definite), simplify and friends', async () => {
  assert.equal((await result('solve(x^2 - 4, x)')).result, '[-2, 2]');
  assert.equal((await result('solve(2x + 1 = x - 3, x)')).result, '[-4]');
  assert.equal((await result('integrate(x^2, x)')).result, 'x^3/3');
  assert.strictEqual((await result('integrate(x^2, x, 0, 3)')).result, 9);
  assert.equal((await result('simplify((x^2 - 1)/(x - 1))')).result, 'x + 1');
  assert.equal((await result('expand((x + 1)^2)')).result, 'x^2 + 2x + 1');
  assert.equal((await result('factor(3x + 3)')).result, '3(x + 1)');
});

test('units where SymPy has them: 5 cm + 2 inch to cm', async () => {
  assert.equal((await result('5 cm + 2 inch to cm')).result, '10.08 cm');
  assert.equal((await result('10 ft to m')).result, '3.048 m');
});

test('a bad expression gets a clear error', async () => {
  const open = await refusal('derivative(x^3 + 2x^2, x', 'invalid_expression');
  assert.match(open.message, /unbalanced parentheses/);
  assert.match((await refusal('2 +', 'invalid_expression')).message, /syntax error/);
  assert.match((await refusal('f(x)', 'invalid_expression')).message, /unknown function 'f'/);
  assert.match((await refusal('5 cm to x', 'invalid_expression')).message, /not a unit: x/);
});

test('hostile expressions are refused before anything runs', async () => {
  const hostile = [
    "__import__('os').system('id')",
    'x.__class__',
    '(1).real',
    'x.evalf()',
    'sin; id',
    'x ** y @ z',
  ];
  for (const expression of hostile) {
    const s = await refusal(expression, 'invalid_expression');
    assert.ok(s.message.length < 200, s.message);
  }
  // Nothing of them reached a sandbox: the execution log has the calculations that ran
  // (their expression is the evaluator's stdin) and none of these.
  const search = async (query) =>
    (await server.client.callTool({ name: 'search_execution_logs', arguments: { query, limit: 100 } })).structuredContent;
  assert.ok((await search('derivative')).total_count >= 1, 'a calculation that ran is logged');
  for (const query of ['import', 'class', 'real', 'evalf', 'sin; id', '@'])
    assert.equal((await search(query)).total_count, 0, `nothing ran for ${query}`);
  // Python syntax the server lets through meets the evaluator's allow-list in the sandbox.
  assert.match((await refusal('lambda', 'invalid_expression')).message, /'lambda' is not allowed/);
  assert.match((await refusal('[1 for x in y]', 'invalid_expression')).message, /not allowed/);
});

test('an expression over 1000 characters is refused; 1000 are evaluated', async () => {
  const long = '1' + '+1'.repeat(500);
  assert.equal(long.length, 1001);
  const s = await refusal(long, 'invalid_params');
  assert.match(s.message, /1001 characters; at most 1000/);
  const fits = '1' + '+1'.repeat(499) + ' ';
  assert.equal(fits.length, 1000);
  assert.strictEqual((await result(fits)).result, 500);
  await refusal('   ', 'invalid_params');
  const missing = await server.client.callTool({ name: 'calculate', arguments: {} });
  assert.equal(missing.isError, true);
  assert.equal(missing.structuredContent.error, 'invalid_params');
});

test('a calculation that does not end is stopped by the short timeout', async () => {
  const s = await refusal('9^9^9^9', 'timeout');
  assert.match(s.message, /longer than 10 s/);
});

test('the evaluator runs in the sandbox, with the expression as data', async () => {
  // A kernels directory whose evaluator reports where it runs: a file the host has is
  // not there, and the expression arrives on stdin untouched.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-calc-'));
  const marker = path.join(dir, 'host-only');
  fs.writeFileSync(marker, 'on the host');
  fs.chmodSync(dir, 0o755); // the sandbox user reads the evaluator
  fs.mkdirSync(path.join(dir, 'python'));
  for (const file of ['kernel.json', 'cellgate_startup.py'])
    fs.copyFileSync(path.join(REPO_ROOT, 'kernels', 'python', file), path.join(dir, 'python', file));
  fs.writeFileSync(
    path.join(dir, 'python', 'cellgate_calc.py'),
    'import json, os, sys\n' +
      'text = sys.stdin.read()\n' +
      `here = "host" if os.path.exists(${JSON.stringify(marker)}) else "sandbox"\n` +
      'print(json.dumps({"result": here + "|" + str(os.getuid()) + "|" + text}))\n',
  );
  const probe = await startServer({ name: 'calculate-probe', args: ['--kernels-dir', dir] });
  try {
    const s = await result('2x + 1', probe.client);
    const [where, uid, echoed] = s.result.split('|');
    assert.equal(where, 'sandbox', 'the host-only file is not visible: not run on the host');
    assert.notEqual(uid, String(process.getuid()), 'not the server user');
    assert.equal(echoed, '2x + 1');
  } finally {
    await probe.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
