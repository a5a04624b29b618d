// A call right after a cell that raised runs: ipykernel aborts every execute_request that
// arrives just after an error while stop_on_error is set, so before cellgate sent
// stop_on_error false, a client's next call a few ms later came back "execution aborted"
// (7 of 30 here). Each call is a cell of its own; none is queued behind it to abort.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { callExec, sc, show, startServer } from './lib.mjs';

let server;

before(async () => {
  server = await startServer({ name: 'after-error', args: ['--http-listen', 'off'] });
});

after(async () => {
  await server?.close();
});

test('30 times: an error, then at once another call in the same session, which runs', async () => {
  const sid = 'sess_aftererror01';
  for (let i = 0; i < 30; i++) {
    const failed = await callExec(server.client, { language: 'python', code: `raise ValueError(${i})`, session_id: sid });
    assert.match(sc(failed).stderr, /ValueError/, show(failed, server));
    const next = await callExec(server.client, { language: 'python', code: `print(${i})`, session_id: sid });
    assert.equal(sc(next).stdout, `${i}\n`, `round ${i}: ${show(next, server)}`);
  }
});
