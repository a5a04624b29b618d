// Live output and logs on stdio: notifications/progress while a cell runs (stdout,
// stderr, display notes) and the server's logs as notifications/message after
// logging/setLevel.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { expectStatus, sleep, startServer } from './lib.mjs';

let server;

before(async () => {
  server = await startServer({ name: 'live', args: ['--http-listen', 'off', '--idle-ttl', '2'] });
});

after(async () => {
  await server?.close();
});

test('progress notifications on stdio: each chunk in order, display notes, all before the result', async () => {
  const notes = [];
  let done = false;
  const r = await server.client.callTool({
    name: 'execute_code',
    arguments: {
      language: 'python',
      session_id: 'live-py',
      code: 'import sys, time\nfor i in range(3):\n    print(f"out {i}", flush=True)\n    time.sleep(0.4)\nprint("warn", file=sys.stderr, flush=True)\nfrom IPython.display import HTML, display\ndisplay(HTML("<b>x</b>"))',
    },
  }, undefined, { timeout: 120000, onprogress: (p) => { assert.equal(done, false, 'a note after the result'); notes.push(p); } });
  done = true;
  expectStatus(r, 'success', server);
  assert.deepEqual(notes.slice(0, 4).map((n) => n.message), ['out 0\n', 'out 1\n', 'out 2\n', '[stderr] warn\n']);
  assert.match(notes[4]?.message ?? '', /^\[display: .*text\/html/);
  assert.deepEqual(notes.map((n) => n.progress), [1, 2, 3, 4, 5]);

  // bash streams its output the same way.
  const bashNotes = [];
  expectStatus(await server.client.callTool({ name: 'execute_code', arguments: { language: 'bash', code: 'for i in 1 2 3; do echo "b$i"; sleep 0.3; done' } },
    undefined, { timeout: 120000, onprogress: (p) => bashNotes.push(p.message) }), 'success', server);
  assert.deepEqual(bashNotes.join(''), 'b1\nb2\nb3\n');

  // Without a progress token: no notifications, the same result.
  const quiet = await server.client.callTool({ name: 'execute_code', arguments: { language: 'python', session_id: 'live-py', code: 'print("q")' } });
  assert.equal(quiet.structuredContent.stdout, 'q\n');
});

test('logging/setLevel: {} and the server logs as notifications/message; bad levels refused', async () => {
  const logs = [];
  server.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await assert.rejects(server.client.setLoggingLevel('loud'), /level/);
  assert.deepEqual(await server.client.setLoggingLevel('info'), {});
  // An idle session is closed by the reaper, which logs it.
  expectStatus(await server.client.callTool({ name: 'execute_code', arguments: { language: 'bash', session_id: 'live-idle', code: 'true' } }), 'success', server);
  for (let i = 0; i < 40 && !logs.some((l) => /live-idle/.test(l.data)); i++) await sleep(250);
  const reaped = logs.find((l) => /closing session live-idle/.test(l.data));
  assert.ok(reaped, JSON.stringify(logs));
  assert.equal(reaped.level, 'info');
  assert.equal(reaped.logger, 'cellgate');
});
