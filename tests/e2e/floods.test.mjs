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
