// The seed 004 demo as a test: upload a CSV, a failing run then its fix, charts, a PDF
// report, list/read artifacts, the HTTP download with and without its token, close.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { runDemo } from './demo.mjs';
import { startServer } from './lib.mjs';

let server;

before(async () => {
  server = await startServer({ name: 'demo', args: ['--http-listen', '127.0.0.1:0'] });
});

after(async () => {
  await server?.close();
});

test('demo: upload → KeyError → fix → charts → PDF → artifacts → HTTP download → close', async () => {
  let s;
  try {
    s = await runDemo(server.client, { log: () => {} });
  } catch (err) {
    err.message += `\n--- server stderr (tail) ---\n${server.stderrText().slice(-4000)}`;
    throw err;
  }

  assert.match(s.session_id, /^sess_[0-9a-f]{12}$/);
  assert.equal(s.upload.path, '/mnt/data/marketing.csv');

  // The error → fix cycle.
  assert.equal(s.buggy_run.exit_code, 1);
  assert.equal(s.buggy_run.is_error, true);
  assert.match(s.buggy_run.key_error, /KeyError/);
  assert.match(s.buggy_run.key_error, /sales_amount/);
  for (const f of ['channel_summary.csv', 'roas_by_channel.png', 'revenue_trend.png', 'marketing_report.pdf'])
    assert.ok(!s.buggy_run.artifacts.includes(`/mnt/data/${f}`), `the failed run made no ${f}`);
  assert.equal(s.fixed_run.exit_code, 0);
  assert.match(s.fixed_run.stdout_excerpt, /Loaded 240 rows/);

  // Artifacts of the fixed run: the charts and the CSV it wrote, not the uploaded input.
  const runPaths = s.fixed_run.artifacts.map((a) => a.path);
  for (const f of ['roas_by_channel.png', 'revenue_trend.png', 'channel_summary.csv'])
    assert.ok(runPaths.includes(`/mnt/data/${f}`), `${f} in the run's artifacts: ${runPaths.join(', ')}`);
  assert.ok(!runPaths.includes('/mnt/data/marketing.csv'), 'the run did not create or modify the upload');
  for (const a of s.fixed_run.artifacts.filter((x) => x.path.endsWith('.png'))) assert.equal(a.mime_type, 'image/png');
  assert.equal(s.fixed_run.artifacts.find((a) => a.filename === 'channel_summary.csv').mime_type, 'text/csv');
  assert.ok(s.report_run.artifacts.some((a) => a.path === '/mnt/data/marketing_report.pdf'));

  // list_artifacts sees everything, with download URLs (HTTP is on).
  const listed = Object.fromEntries(s.artifacts.map((a) => [a.filename, a]));
  for (const f of ['marketing.csv', 'channel_summary.csv', 'roas_by_channel.png', 'revenue_trend.png', 'marketing_report.pdf']) {
    assert.ok(listed[f], `list_artifacts has ${f}`);
    assert.match(listed[f].download_url ?? '', /^http:\/\/127\.0\.0\.1:\d+\/files\/sess_[0-9a-f]{12}\/.+\?token=.+/, `${f} download_url`);
  }
  assert.equal(listed['marketing_report.pdf'].mime_type, 'application/pdf');

  // The PDF read back over MCP, the PNG as an image block.
  assert.equal(s.pdf.header.slice(0, 5), '%PDF-');
  assert.equal(s.pdf.size_bytes, listed['marketing_report.pdf'].size_bytes);
  assert.ok(s.pdf.size_bytes > 10000, `PDF of ${s.pdf.size_bytes} bytes holds two charts`);
  assert.ok(s.pdf.pages >= 1);
  assert.equal(s.png.image_block, true);
  assert.ok(s.png.width > 100 && s.png.height > 100, `PNG ${s.png.width}×${s.png.height}`);

  // HTTP: the same bytes with the token, nothing without it or with a wrong one.
  assert.ok(s.http, 'the HTTP step ran');
  assert.equal(s.http.status, 200);
  assert.equal(s.http.content_type.split(';')[0], 'application/pdf');
  assert.equal(s.http.bytes, s.pdf.size_bytes);
  assert.equal(s.http.identical, true);
  assert.ok([403, 404].includes(s.http.no_token_status), `no token → ${s.http.no_token_status}`);
  assert.ok([403, 404].includes(s.http.bad_token_status), `wrong token → ${s.http.bad_token_status}`);

  // Closed: the session and its download URL are gone.
  assert.equal(s.closed.status, 'closed');
  assert.equal(s.closed.executions_count, 3);
  assert.ok([403, 404].includes(s.http.after_close_status), `after close → ${s.http.after_close_status}`);
});
