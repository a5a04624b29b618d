// Output floods (issue 9, findings 4 and 6): the server's memory stays bounded whatever a
// kernel sends (during a cell and after it returned), and heartbeats are served under any
// output volume. (Unusual bytes: bytes.test.mjs.)
//
// CELLGATE_E2E_FLOOD_SESSIONS (default 2) sets how many sessions are live during the floods;
// CELLGATE_E2E_FLOOD_REPORT=1 prints each flood's peak server RSS.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, show, startServer } from './lib.mjs';

const RSS_LIMIT_KB = 64 * 1024;
const SESSIONS = Math.max(2, Number(process.env.CELLGATE_E2E_FLOOD_SESSIONS || 2));
const REPORT = process.env.CELLGATE_E2E_FLOOD_REPORT === '1';

let server;
let client;
let pid;

before(async () => {
  server = await startServer();
  client = server.client;
  pid = server.transport.pid;
  assert.ok(pid > 0, 'the SDK transport gives the server pid');
  // Sessions fl_0 (floods) and fl_1 (must stay responsive), plus idle ones up to SESSIONS.
  await Promise.all(
    Array.from({ length: SESSIONS }, (_, i) =>
      callExec(client, { language: 'python', session_id: `fl_${i}`, code: 'x = 1' }).then((r) =>
        expectStatus(r, 'success', server),
      ),
    ),
  );
});

after(async () => {
  await server?.close();
});

/** The server's VmRSS and VmHWM in kB. */
function memory() {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(text.match(/VmRSS:\s+(\d+)/)[1]), hwm: Number(text.match(/VmHWM:\s+(\d+)/)[1]) };
}

/** Samples the server's RSS every 20 ms until stop(), which returns the peak in kB. */
function watchRss() {
  let peak = memory().rss;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, memory().rss);
    } catch {
      // the server exited: the test fails elsewhere
    }
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, memory().rss);
      return peak;
    },
  };
}

function report(name, peakKb, extra = '') {
  if (REPORT)
    process.stderr.write(`flood ${name}: peak VmRSS ${(peakKb / 1024).toFixed(1)} MB, VmHWM so far ` +
      `${(memory().hwm / 1024).toFixed(1)} MB, ${SESSIONS} sessions ${extra}\n`);
}

async function py(session, code, opts) {
  return callExec(client, { language: 'python', session_id: session, code, ...opts });
}

/** Asserts that session fl_1 answers a cell within a few seconds. */
async function secondSessionResponds() {
  const started = Date.now();
  const r = await py('fl_1', 'print(x + 1)', { timeout: 20 });
  assert.equal(expectStatus(r, 'success', server).stdout, '2\n', show(r, server));
  return Date.now() - started;
}

// -----------------------------------------------------------------------------------------
// Heartbeats under load (point 6) and memory during a cell (point 4)

test('a 300 MB print keeps the kernel and its state; memory stays bounded', async () => {
  let r = await py('fl_0', 'kept = 41');
  expectStatus(r, 'success', server);
  const watch = watchRss();
  const started = Date.now();
  r = await py('fl_0', "for i in range(300_000): print('x' * 999)", { timeout: 120 });
  const peak = watch.stop();
  report('300 MB print', peak, `(${Date.now() - started} ms)`);
  const s = expectStatus(r, 'success', server);
  assert.equal(s.kernel_restarted, false, show(r, server));
  assert.equal(s.stdout_truncated, true);
  assert.ok(s.stdout.startsWith('x'.repeat(999) + '\n'), 'the head is kept');
  assert.ok(s.stdout.endsWith('x'.repeat(999) + '\n'), 'the tail is kept');
  r = await py('fl_0', 'print(kept + 1)');
  const next = expectStatus(r, 'success', server);
  assert.equal(next.stdout, '42\n', show(r, server));
  assert.equal(next.kernel_restarted, false);
  assert.ok(peak < RSS_LIMIT_KB, `server VmRSS peaked at ${peak} kB during the print`);
  await secondSessionResponds();
});

// -----------------------------------------------------------------------------------------
// Many display outputs (point 4)

test('10,000 display_data in one cell: memory bounded, the result says what was kept', async () => {
  const watch = watchRss();
  const r = await py('fl_0', [
    'from IPython.display import display, HTML',
    'for i in range(10_000): display(HTML(f"<b>{i}</b>" + "h" * 2000))',
  ].join('\n'), { timeout: 120 });
  const peak = watch.stop();
  report('10,000 display_data', peak);
  const s = expectStatus(r, 'success', server);
  assert.match(s.notice ?? '', /display output\(s\) .* were dropped: this run's display outputs passed the \d+ MB .* or the 1000 outputs/, show(r, server));
  assert.ok(peak < RSS_LIMIT_KB, `server VmRSS peaked at ${peak} kB`);
  await secondSessionResponds();
});

// -----------------------------------------------------------------------------------------
// Messages over --max-message-mb (point 4): the Python kernel keeps ordinary outputs under
// it; what another kernel sends over it is refused and its connection connected again.

test('one 30 MB print from Python arrives whole, in pieces under the message limit', async () => {
  const watch = watchRss();
  const r = await py('fl_0', "s = 'y' * 30_000_000\nprint(s)\nprint('after')", { timeout: 120 });
  const peak = watch.stop();
  report('one 30 MB print', peak);
  const s = expectStatus(r, 'success', server);
  assert.equal(s.notice, undefined, `nothing refused: ${show(r, server)}`);
  assert.equal(s.stdout_truncated, true);
  assert.ok(s.stdout.startsWith('yyyy') && s.stdout.endsWith('y\nafter\n'), 'head and tail kept');
  assert.ok(peak < RSS_LIMIT_KB, `server VmRSS peaked at ${peak} kB`);
});

test("a cell's value too large for a message is saved as a file by the Python kernel, with a link", async () => {
  const r = await py('fl_0', [
    'class Big:',
    '    def _repr_html_(self): return "<p>" + "z" * 12_000_000 + "</p>"',
    '    def __repr__(self): return "Big()"',
    'Big()',
  ].join('\n'), { timeout: 120 });
  const s = expectStatus(r, 'success', server);
  assert.equal(s.notice, undefined, `nothing refused: ${show(r, server)}`);
  const value = (s.outputs ?? []).find((o) => o.type === 'execute_result');
  assert.ok(value, show(r, server));
  const text = value.data['text/plain'];
  assert.ok(text.startsWith('Big()\n'), `the small part stays inline: ${text}`);
  const saved = /text\/html output of (\d+) bytes saved to (\/mnt\/data\/outputs\/\S+\.html)/.exec(text);
  assert.ok(saved, text);
  assert.equal(value.data['text/html'], undefined);
  const file = (s.artifacts ?? []).find((a) => a.path === saved[2]);
  assert.ok(file, `the saved value is an artifact: ${show(r, server)}`);
  assert.equal(file.size_bytes, Number(saved[1]));
  assert.equal(file.size_bytes, 12_000_007);
});

test('a JavaScript display over the message limit is refused with a notice; the next cell prints', async () => {
  const r = await callExec(client, { language: 'javascript', session_id: 'fl_0', timeout: 60,
    code: "const tslab = require('tslab');\ntslab.display.html('<p>' + 'w'.repeat(12_000_000) + '</p>');\n'done'" });
  const s = expectStatus(r, 'success', server);
  assert.match(s.notice ?? '', /refused: each was larger than the 8 MB the server accepts \(--max-message-mb\)/, show(r, server));
  for (let i = 0; i < 2; i++) {
    const next = expectStatus(await callExec(client, { language: 'javascript', session_id: 'fl_0', code: `console.log('next ${i}')` }), 'success', server);
    assert.equal(next.stdout, `next ${i}\n`, 'the iopub connection is back');
  }
});
