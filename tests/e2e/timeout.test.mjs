// Timeouts (interrupt, then kernel restart), concurrency across sessions, and MCP cancellation.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, callExecWhenIdle, expectStatus, show, sleep, startServer } from './lib.mjs';

let server;
let client;

before(async () => {
  server = await startServer();
  client = server.client;
});

after(async () => {
  await server?.close();
});

test('a timed-out cell leaves no processes or zombies behind, and the session keeps its state', async () => {
  const sid = 'sess_e2estrays001';
  const fork = "import os, time\nkept = 'yes'\nfor i in range(5):\n    if os.fork() == 0:\n        while True: time.sleep(0.05)\ntime.sleep(100)";
  const r = await callExec(client, { language: 'python', code: fork, session_id: sid, timeout: 2 });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.kernel_restarted, false, show(r, server));
  // Every process in the sandbox's pid namespace, with its state letter.
  const census = "import os\nrows = []\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        stat = open(f'/proc/{p}/stat').read()\n        rows.append(stat.rsplit(') ', 1)[1][0])\nprint(kept, len(rows), ''.join(sorted(rows)).count('Z'))";
  const after = await callExec(client, { language: 'python', code: census, session_id: sid });
  // catatonit and the kernel only: the five children are gone, none left as a zombie.
  assert.equal(expectStatus(after, 'success', server).stdout, 'yes 2 0\n', show(after, server));
  const again = await callExec(client, {
    language: 'python',
    code: "import subprocess\nprint(subprocess.run(['echo', 'forks again'], capture_output=True, text=True).stdout.strip())",
    session_id: sid,
  });
  assert.equal(expectStatus(again, 'success', server).stdout, 'forks again\n');
});

test('timeout interrupts the cell, keeps partial output and session state', async () => {
  const sid = 'sess_e2etimeout01';
  expectStatus(await callExec(client, { language: 'python', code: 'x = 7', session_id: sid }), 'success', server);

  const r = await callExec(client, {
    language: 'python',
    code: "import time\nprint('before', flush=True)\nwhile True: pass",
    session_id: sid,
    timeout: 2,
  });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
  assert.equal(s.timed_out, true);
  assert.equal(s.kernel_restarted, false, 'an interruptible cell must not cost the kernel');
  assert.ok(s.stdout.includes('before'), show(r, server));
  assert.equal(typeof s.error_message, 'string');

  const after = await callExec(client, { language: 'python', code: 'print(x)', session_id: sid });
  assert.equal(expectStatus(after, 'success', server).stdout, '7\n');
});

test('a cell that ignores SIGINT is ended by a kernel restart; the session lives on', async () => {
  const sid = 'sess_e2esigign001';
  const r = await callExec(client, {
    language: 'python',
    code: 'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.1)',
    session_id: sid,
    timeout: 2,
  });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
  assert.equal(s.timed_out, true);
  assert.equal(s.kernel_restarted, true, show(r, server));

  const alive = await callExec(client, { language: 'python', code: "print('alive')", session_id: sid });
  assert.equal(expectStatus(alive, 'success', server).stdout, 'alive\n');
});

test('timeout_ms (seed 001) is an alias of timeout', async () => {
  const r = await callExec(client, {
    language: 'python',
    code: 'while True: pass',
    session_id: 'sess_e2etimems001',
    timeout_ms: 1500,
  });
  const s = expectStatus(r, 'timeout', server);
  assert.equal(s.error_code, 'EXECUTION_TIMEOUT');
  assert.equal(s.timed_out, true);
});

test('a long cell blocks neither ping, tools/list nor another session', async () => {
  const longSid = 'sess_e2elongrun01';
  const otherSid = 'sess_e2eothers01';
  // Warm both sessions so sandbox start-up is not part of what is compared.
  expectStatus(await callExec(client, { language: 'python', code: 'pass', session_id: longSid }), 'success', server);
  expectStatus(await callExec(client, { language: 'python', code: 'pass', session_id: otherSid }), 'success', server);

  const order = [];
  const track = (name, promise) =>
    promise.then((v) => {
      order.push(name);
      return v;
    });

  const long = track(
    'long',
    callExec(client, { language: 'python', code: "import time; time.sleep(6); print('done')", session_id: longSid }),
  );
  await sleep(500); // let the long cell start

  const [, tools, other] = await Promise.all([
    track('ping', client.ping({ timeout: 30000 })),
    track('listTools', client.listTools(undefined, { timeout: 30000 })),
    track('other', callExec(client, { language: 'python', code: 'print(1)', session_id: otherSid })),
  ]);
  assert.equal(order.includes('long'), false, `long cell finished before the others: ${order.join(', ')}`);

  assert.ok(tools.tools.some((t) => t.name === 'execute_code'));
  assert.equal(expectStatus(other, 'success', server).stdout, '1\n');

  const longResult = await long;
  assert.equal(expectStatus(longResult, 'success', server).stdout, 'done\n');
  assert.equal(order.at(-1), 'long', `completion order: ${order.join(', ')}`);
});

test('notifications/cancelled stops the cell; the session keeps working', async () => {
  const sid = 'sess_e2ecancel001';
  expectStatus(await callExec(client, { language: 'python', code: 'i = -1', session_id: sid }), 'success', server);

  const controller = new AbortController();
  const running = callExec(
    client,
    { language: 'python', code: 'import time\nfor i in range(100): time.sleep(0.1)', session_id: sid },
    { signal: controller.signal },
  );
  await sleep(1000);
  controller.abort(new Error('e2e cancel'));
  await assert.rejects(running, 'an aborted request must reject on the client');

  // The server tears the run down asynchronously; a session_busy answer meanwhile is allowed.
  const r = await callExecWhenIdle(client, { language: 'python', code: "print('still here')", session_id: sid });
  assert.equal(expectStatus(r, 'success', server).stdout, 'still here\n');

  // The loop runs 10 s if left alone; cancellation must have stopped it: either interrupted
  // (i stops short of 99) or, at worst, by a kernel restart (i is gone).
  const where = await callExec(client, { language: 'python', code: 'print(i)', session_id: sid });
  const ws = where.structuredContent;
  if (ws?.status === 'execution_error' && ws.stderr.includes('NameError')) return;
  const i = Number(expectStatus(where, 'success', server).stdout.trim());
  assert.ok(Number.isInteger(i) && i >= 0 && i < 99, `loop index after cancel: ${i} (${show(where, server)})`);
});
