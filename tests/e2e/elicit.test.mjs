// Input from the user (issue 16, point 3) on 2025-11-25: when a Python cell asks for input
// (input(), getpass) and the call's stdin has run out, a client that declared elicitation is
// asked with elicitation/create (the prompt in the message, one string field), and the line
// it accepts goes to the kernel; a decline, a cancel or a client without elicitation gets
// the EOF error as before, never a hang. Passwords are said to be passwords. Over stdio and
// Streamable HTTP, with the official SDK client's elicitation handler.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { callExec, sc, show, startHttpServer, startServer } from './lib.mjs';

// What the user answers next, and what they were asked.
let answers = [];
const asked = [];
const handler = async (request) => {
  asked.push(request.params);
  const next = answers.shift();
  if (next === undefined || next === 'decline') return { action: 'decline' };
  if (next === 'cancel') return { action: 'cancel' };
  if (next === 'never') return new Promise(() => {}); // a user who never answers
  return { action: 'accept', content: { input: next } };
};

function scenarios(get) {
  test('input() with no stdin asks the user, and the answer reaches the code', async () => {
    const { client, server } = get();
    answers = ['Ada'];
    asked.length = 0;
    const r = await callExec(client, { language: 'python', code: "name = input('Name? ')\nprint('Hello', name)" });
    assert.equal(sc(r).status, 'success', show(r, server));
    assert.equal(sc(r).stdout, 'Name? Hello Ada\n');
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /asks for a line of input: "Name\? "/);
    assert.deepEqual(asked[0].requestedSchema.required, ['input']);
    assert.equal(asked[0].requestedSchema.properties.input.type, 'string');
  });

  test('stdin first, then the user; each input() asks once', async () => {
    const { client, server } = get();
    answers = ['second', 'third'];
    asked.length = 0;
    const code = "a = input()\nb = input()\nc = input('c? ')\nprint(a, b, c)";
    const r = await callExec(client, { language: 'python', code, stdin: 'first\n' });
    assert.equal(sc(r).status, 'success', show(r, server));
    assert.equal(sc(r).stdout, 'c? first second third\n');
    assert.equal(asked.length, 2);
  });

  test('a password is asked for as one, and its value is not echoed', async () => {
    const { client, server } = get();
    answers = ['s3cret'];
    asked.length = 0;
    const code = "import getpass\npw = getpass.getpass('Password: ')\nprint(len(pw), pw == 's3cret')";
    const r = await callExec(client, { language: 'python', code });
    assert.equal(sc(r).status, 'success', show(r, server));
    assert.match(sc(r).stdout, /6 True\n$/);
    assert.ok(!sc(r).stdout.includes('s3cret'));
    assert.match(asked[0].message, /asks for a password/);
    assert.equal(asked[0].requestedSchema.properties.input.title, 'Password');
  });

  test('declined or cancelled: the EOF error, as with no elicitation, and the session goes on', async () => {
    const { client, server } = get();
    for (const answer of ['decline', 'cancel']) {
      answers = [answer];
      const r = await callExec(client, { language: 'python', code: 'input()', session_id: 'sess_elicitdecl01' });
      assert.equal(sc(r).status, 'execution_error', show(r, server));
      assert.match(sc(r).stderr, /EOFError/, show(r, server));
    }
    answers = ['ok'];
    const r = await callExec(client, { language: 'python', code: 'print(input())', session_id: 'sess_elicitdecl01' });
    assert.equal(sc(r).stdout, 'ok\n', show(r, server));
  });

  test('a user who never answers: the call times out as any cell does, and the session keeps its state', async () => {
    const { client, server } = get();
    const sid = 'sess_elicitnever1';
    assert.equal(sc(await callExec(client, { language: 'python', code: 'kept = 42', session_id: sid })).status, 'success');
    answers = ['never'];
    const r = await callExec(client, { language: 'python', code: 'input("waiting: ")', session_id: sid, timeout: 2 });
    assert.equal(sc(r).timed_out, true, show(r, server));
    answers = [];
    const again = await callExec(client, { language: 'python', code: 'print(kept)', session_id: sid });
    assert.equal(sc(again).stdout, '42\n', show(again, server));
  });
}

describe('over stdio', () => {
  let server;
  before(async () => {
    server = await startServer({
      name: 'elicit',
      capabilities: { elicitation: {} },
      onClient: (c) => c.setRequestHandler(ElicitRequestSchema, handler),
    });
  });
  after(async () => server?.close());
  scenarios(() => ({ client: server.client, server }));

  test('a client without elicitation is not asked: input() fails at once, as before', async () => {
    const plain = await startServer({ name: 'no-elicit' });
    try {
      let r = await callExec(plain.client, { language: 'python', code: 'input()' });
      assert.equal(sc(r).status, 'execution_error');
      assert.match(sc(r).stderr, /StdinNotImplementedError: input\(\) needs stdin/);
      r = await callExec(plain.client, { language: 'python', code: 'input(); input()', stdin: 'one\n' });
      assert.match(sc(r).stderr, /EOFError/);
    } finally {
      await plain.close();
    }
  });
});

describe('over Streamable HTTP', () => {
  let http;
  let client;
  before(async () => {
    http = await startHttpServer();
    ({ client } = await http.connect(undefined, {
      capabilities: { elicitation: {} },
      onClient: (c) => c.setRequestHandler(ElicitRequestSchema, handler),
    }));
  });
  after(async () => http?.close());
  scenarios(() => ({ client, server: http }));
});
