// Hostile corpus, media (issue 23, points 2 and 13): image bombs a sandbox displays must not
// freeze or balloon the server — a progressive JPEG with 30,000 empty scans, one at the scan
// cap with 25 million pixels, a PNG with hundreds of zTXt chunks that inflate to 7.9 MB
// each — and a one-shot run's figure too large for a message must stay reachable after its
// sandbox is gone (a preview in the result, a download that serves it). The stall is judged
// by the server's own CPU time during the call (utime + stime of all its threads; a preview
// helper is a child, not counted), never by wall time; a pinger's longest gap is reported.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import { RSS_BOUND_MB, caseTable, secondSession, startCorpusServer } from './corpus.mjs';
import { cpuSeconds, jpegScansCode, memoryMb, noisePngCode, pngZtxtCode, resetPeak, startPinger } from './corpus_media.mjs';

const kase = caseTable('corpus_media');
// The server's own CPU time one attack call may cost: the call's messages and result (the
// PNG bomb is a 0.8 MB message) take a few hundredths of a second; decoding any of these
// images on the server costs it seconds.
const CPU_BOUND_S = 1.0;
const BUDGET = 49152; // the default --image-budget

let server;
let bystander;

before(async () => {
  server = await startCorpusServer({ name: 'corpus-media', args: ['--http-listen', '127.0.0.1:0'] });
  bystander = secondSession(server);
  await bystander.check('at start');
});

after(async () => {
  await server?.close();
});

/** Runs CODE in session SID while pinging; returns { r, cpuS, peakAboveMb, ping }. */
async function measured(sid, code) {
  const warm = await callExec(server.client, { language: 'python', code: 'print(1)', session_id: sid });
  assert.equal(sc(warm).status, 'success', show(warm, server));
  resetPeak(server.pid);
  const rss = memoryMb(server.pid).rssMb;
  const cpu0 = cpuSeconds(server.pid);
  const pinger = startPinger(server.client, { everyMs: 10, maxPings: 30000 });
  const r = await callExec(server.client, { language: 'python', code, session_id: sid, timeout: 300 }, { timeoutMs: 3600000 });
  const ping = await pinger.stop();
  const cpuS = cpuSeconds(server.pid) - cpu0;
  const peakAboveMb = memoryMb(server.pid).hwmMb - rss;
  assert.equal(sc(r).status, 'success', show(r, server));
  return { r, cpuS, peakAboveMb, ping };
}

const imageNote = (r) => (r.content[0].text.split('\n').find((l) => l.includes(' image of ')) ?? '');
const said = (m) => `server CPU ${m.cpuS.toFixed(2)} s, peak +${m.peakAboveMb.toFixed(1)} MB, longest ping gap ${m.ping.maxGapMs.toFixed(0)} ms over ${m.ping.pings} pings`;

kase('progressive JPEG, 2048x2048, 30,000 empty scans (300 KB), displayed', 'linked, no preview (over the 100-scan cap, not decoded); server CPU < 1 s', async () => {
  const m = await measured('sess_mediajpeg01', jpegScansCode({ side: 2048, scans: 30000 }));
  assert.ok(m.cpuS < CPU_BOUND_S, `the server spent ${m.cpuS.toFixed(2)} s of its own CPU on the call (${said(m)})`);
  const item = sc(m.r).outputs.find((o) => o.mime_type === 'image/jpeg');
  assert.ok(item && !item.preview, JSON.stringify(sc(m.r).outputs));
  assert.match(imageNote(m.r), /no preview: the JPEG has more than 100 scans/, show(m.r, server));
  assert.ok(m.r.content.some((c) => c.type === 'resource_link' && c.uri === item.download_url), 'the whole file is linked');
  return said(m);
});

kase('progressive JPEG at the scan cap: 5000x5000 (25 Mpx), 100 empty scans', `decoded only in the helper (previewed or stopped there); server peak < +${RSS_BOUND_MB} MB, CPU < 1 s`, async () => {
  const m = await measured('sess_mediajpeg02', jpegScansCode({ side: 5000, scans: 100, pad: 60000 }));
  assert.ok(m.peakAboveMb < RSS_BOUND_MB, `the server grew by ${m.peakAboveMb.toFixed(0)} MB (${said(m)})`);
  assert.ok(m.cpuS < CPU_BOUND_S, `the server spent ${m.cpuS.toFixed(2)} s of its own CPU on the call (${said(m)})`);
  const note = imageNote(m.r);
  assert.match(note, /a smaller preview is sent|no preview: /, show(m.r, server));
  return `${note.includes('preview is sent') ? 'previewed' : note.match(/no preview: [^)]*/)?.[0]}; ${said(m)}`;
});

kase('PNG with 100 zTXt chunks inflating to 7.9 MB each (0.8 MB), displayed', `linked, no preview (over the 64-ancillary-chunk cap); server peak < +${RSS_BOUND_MB} MB, CPU < 1 s`, async () => {
  const m = await measured('sess_mediapng001', pngZtxtCode({ chunks: 100, inflated: 7_900_000 }));
  assert.ok(m.peakAboveMb < RSS_BOUND_MB, `the server grew by ${m.peakAboveMb.toFixed(0)} MB (${said(m)})`);
  assert.ok(m.cpuS < CPU_BOUND_S, `the server spent ${m.cpuS.toFixed(2)} s of its own CPU on the call (${said(m)})`);
  assert.match(imageNote(m.r), /no preview: the PNG has more than 64 ancillary chunks/, show(m.r, server));
  return said(m);
});

kase('PNG with 60 zTXt chunks of 7.9 MB (under the chunk cap), displayed', 'previewed without them (the helper strips ancillary chunks); server peak bounded', async () => {
  const m = await measured('sess_mediapng002', pngZtxtCode({ chunks: 60, inflated: 7_900_000 }));
  assert.ok(m.peakAboveMb < RSS_BOUND_MB, `the server grew by ${m.peakAboveMb.toFixed(0)} MB (${said(m)})`);
  assert.ok(m.cpuS < CPU_BOUND_S, `the server spent ${m.cpuS.toFixed(2)} s of its own CPU on the call (${said(m)})`);
  const item = sc(m.r).outputs.find((o) => o.mime_type === 'image/png');
  assert.ok(item?.preview, `a preview of the 64x64 image: ${show(m.r, server)}`);
  assert.deepEqual([item.preview.width, item.preview.height], [64, 64]);
  return said(m);
});

kase('the other session after the image bombs', 'answers with its state', async () => bystander.check('after the image bombs'));

kase('a preview helper that runs out of time (--preview-timeout-ms 100) on a 25 Mpx image', 'the image is linked with a note saying the preview was stopped; no hang', async () => {
  const small = await startCorpusServer({ name: 'corpus-media-timeout', args: ['--http-listen', '127.0.0.1:0', '--preview-timeout-ms', '100'] });
  try {
    const r = await callExec(small.client, { language: 'python', code: jpegScansCode({ side: 5000, scans: 100, pad: 60000 }), session_id: 'sess_mediatime01' });
    assert.equal(sc(r).status, 'success', show(r, small));
    assert.match(imageNote(r), /no preview: .*(took too long|no time was left|signal)/, show(r, small));
    return imageNote(r).match(/no preview: [^)]*\)?/)?.[0];
  } finally {
    await small.close();
  }
});

kase('one-shot run (no session_id) whose figure is too large for a message (--max-message-mb 1)', 'a preview in the result and a download that outlives the sandbox, byte for byte', async () => {
  const one = await startCorpusServer({ name: 'corpus-media-oneshot', args: ['--http-listen', '127.0.0.1:0', '--max-message-mb', '1'] });
  try {
    const r = await callExec(one.client, { language: 'python', code: noisePngCode({ w: 700, h: 500 }) });
    const s = sc(r);
    assert.equal(s.status, 'success', show(r, one));
    assert.equal(s.session_id, null);
    const size = Number(s.stdout.trim());
    const large = (s.artifacts ?? []).find((a) => /^\/mnt\/data\/outputs\/large-.*\.png$/.test(a.path));
    assert.ok(large, `the saved figure is listed: ${show(r, one)}`);
    assert.equal(large.size_bytes, size);
    assert.ok(large.download_url, `the listed figure has a download URL: ${show(r, one)}`);
    // the preview, within the budget
    assert.ok(large.preview, `a preview of the figure: ${show(r, one)}`);
    const blocks = r.content.filter((c) => c.type === 'image');
    assert.equal(blocks.length, 1, JSON.stringify(r.content.map((c) => c.type)));
    assert.ok(Buffer.from(blocks[0].data, 'base64').length <= BUDGET);
    assert.ok(r.content.some((c) => c.type === 'resource_link' && c.uri === large.download_url), 'linked');
    // the sandbox is gone; the download serves the whole figure
    const res = await fetch(large.download_url);
    assert.equal(res.status, 200, `GET ${large.download_url}`);
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body.length, size);
    assert.deepEqual([body.readUInt32BE(16), body.readUInt32BE(20)], [700, 500]);
    // a wrong token gets nothing
    const bad = await fetch(large.download_url.replace(/token=[^&]+/, 'token=0000'));
    assert.equal(bad.status, 404);
    return `${size} bytes downloaded after the sandbox went; preview ${large.preview.width}x${large.preview.height} ${large.preview.mime_type}`;
  } finally {
    await one.close();
  }
});

kase('one-shot run with keeping off (--oneshot-keep 0) that writes a file', 'the file is listed without a URL, marked kept: false, and the text says it went with the sandbox', async () => {
  const off = await startCorpusServer({ name: 'corpus-media-keepoff', args: ['--http-listen', '127.0.0.1:0', '--oneshot-keep', '0'] });
  try {
    const r = await callExec(off.client, { language: 'python', code: "open('/mnt/data/out.csv', 'w').write('a,b\\n1,2\\n')" });
    const s = sc(r);
    assert.equal(s.status, 'success', show(r, off));
    const item = s.artifacts.find((a) => a.path === '/mnt/data/out.csv');
    assert.ok(item && item.kept === false && !item.download_url, show(r, off));
    assert.match(r.content[0].text, /went with the one-shot sandbox/);
    return 'not advertised as downloadable';
  } finally {
    await off.close();
  }
});
