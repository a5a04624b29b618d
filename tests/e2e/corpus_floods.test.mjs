// Hostile corpus, floods: big prints from each language, a million lines, 10,000 displays,
// invalid UTF-8, NUL and ANSI bytes, a compromised kernel forging its own iopub traffic, and a
// 50 MB PNG. The server's RSS (VmRSS sampled every 100 ms, and VmHWM) must stay under
// RSS_BOUND_MB with 10 sessions live, results must stay within the result budget, the flooding
// session keeps its state, and a second session stays responsive.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import { RSS_BOUND_MB, caseTable, secondSession, startCorpusServer, watchMemory } from './corpus.mjs';

const table = caseTable('corpus_floods');
/**
 * A case here starts with a live server: when an earlier flood killed the client's transport
 * (an oversized result line) or the server, that case has failed, and this one gets a new
 * server so that it is judged on its own.
 */
const kase = (name, expected, fn, opts = {}) => table(name, expected, async () => {
  let alive = true;
  try {
    await server.client.ping({ timeout: 10000 });
  } catch {
    alive = false;
  }
  if (!alive) {
    await server.close().catch(() => {});
    await start();
    ok(await run({ language: 'python', session_id: FLOOD, code: "kept = 'kept-1'" }));
  }
  const observed = await fn();
  return alive ? observed : `${observed} (on a new server: an earlier case killed the last one)`;
}, opts);
kase.todo = (reason, name, expected, fn) => kase(name, expected, fn, { todo: reason });
// Issue 9 measured 500 MB prints. 200 MB from Python and JavaScript is three times the
// 64 MB bound, so an unbounded buffer still shows (the issue saw ~0.9 MB of server RSS per
// MB printed) at two fifths of the time; bash, which is cheap, prints the full 500 MB.
const PRINT_MB = 500;
const BASH_PRINT_MB = 500;
const RESULT_BUDGET = 1024 * 1024; // issue 9, point 5: default result budget on stdio
const LIVE_SESSIONS = 10; // the floods run with this many sessions live (the default --max-sessions)
const FLOOD = 'sess_corpusflood01';
const JS_FLOOD = 'sess_corpusidle000';
const PNG_SESSION = 'sess_corpusidle001'; // one of the idle live sessions (10 are live: no room for more)

let server;
let bystander;

async function start() {
  server = await startCorpusServer({ name: 'corpus-floods', args: ['--http-listen', '127.0.0.1:0', '--interrupt-grace-ms', '1500'] });
  bystander = secondSession(server);
  await bystander.check('at start');
  // LIVE_SESSIONS live sessions: the bystander, the flood session, the compromised kernel's
  // session and idle ones.
  for (let i = 0; i < LIVE_SESSIONS - 3; i++) {
    const r = await callExec(server.client, { language: 'python', code: 'idle = True', session_id: `sess_corpusidle${String(i).padStart(3, '0')}` });
    assert.equal(sc(r).status, 'success', show(r, server));
  }
}

before(start);

after(async () => {
  await server?.close();
});

const run = (args, timeoutMs = 240000) => callExec(server.client, args, { timeoutMs });
const ok = (r) => {
  assert.equal(sc(r).status, 'success', show(r, server));
  return sc(r);
};

/** Runs one call while watching the server's memory; returns [result, memory, bytes]. */
async function flood(args) {
  const watch = watchMemory(server);
  let r;
  let mem;
  try {
    r = await run(args);
  } finally {
    mem = watch.stop();
  }
  return [r, mem, Buffer.byteLength(JSON.stringify(r))];
}

const memNote = (m) => `RSS ${m.startRssMb.toFixed(0)} MB before, peak ${m.peakRssMb.toFixed(0)} MB, HWM ${m.hwmMb.toFixed(0)} MB`;
function withinBound(m) {
  assert.ok(m.peakRssMb <= RSS_BOUND_MB && m.hwmMb <= RSS_BOUND_MB, `server memory over ${RSS_BOUND_MB} MB: ${memNote(m)}`);
}

/** The flood session still holds `kept` (no kernel restart lost it). */
async function keptState(expected = 'kept-1', sid = FLOOD) {
  const r = await run({ language: 'python', session_id: sid, code: 'kept' });
  assert.equal(sc(r).status, 'success', `flood session lost its state: ${show(r, server)}`);
  assert.equal(String(sc(r).returnValue).replace(/'/g, ''), expected);
}

// An ordinary print loop, no flush: ipykernel would gather a tight loop's writes into one
// buffer between its 0.2 s flushes (a message of hundreds of MB, refused by the server, or
// the kernel out of memory); kernels/python/cellgate_startup.py flushes every megabyte.
kase(`print flood, python (${PRINT_MB} MB in 1 MB prints, no flush)`,
  `success, cut with the full text saved; state kept (no heartbeat restart); server RSS ≤ ${RSS_BOUND_MB} MB`, async () => {
    ok(await run({ language: 'python', session_id: FLOOD, code: "kept = 'kept-1'" }));
    const [r, mem, bytes] = await flood({ language: 'python', session_id: FLOOD, timeout: 90,
      code: `s = 'x' * ((1 << 20) - 1)\nfor _ in range(${PRINT_MB}):\n    print(s)\nprint('END')` });
    const s = sc(r);
    assert.equal(s.status, 'success', show(r, server));
    assert.equal(s.kernel_restarted, false);
    assert.equal(s.stdout_truncated, true);
    assert.ok(s.stdout.endsWith('END\n'), 'the tail is kept');
    assert.ok(s.stdout_file, 'full output saved');
    assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes`);
    withinBound(mem);
    await keptState();
    return `${s.status}, ${bytes} B result, ${memNote(mem)}; ${await bystander.check()}`;
  });

// Node holds everything a cell writes until the cell yields (tslab sends from the event loop),
// and then queues it for ZeroMQ in the kernel's own memory: 500 MB written in a loop, even
// one that yields, takes the JavaScript kernel past the sandbox's 512 MB. Contained: the
// kernel is killed by its own limit, the call says so, the server stays within its bound.
// Another sandbox than the flood session's, whose memory stays its Python kernel's.
kase(`print flood, javascript (${PRINT_MB} MB in 1 MB writes)`,
  `success, cut; or the kernel out of its own memory, said plainly, and the session runs again; server RSS ≤ ${RSS_BOUND_MB} MB`, async () => {
    const [r, mem, bytes] = await flood({ language: 'javascript', session_id: JS_FLOOD, timeout: 90,
      code: `const s = 'x'.repeat((1 << 20) - 1) + '\\n';\nfor (let i = 0; i < ${PRINT_MB}; i++) process.stdout.write(s);\nconsole.log('END');` });
    const s = sc(r);
    withinBound(mem);
    assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes`);
    if (s.status === 'success') {
      assert.equal(s.stdout_truncated, true);
      assert.ok(s.stdout.endsWith('END\n'), 'the tail is kept');
    } else {
      assert.match(s.error_message ?? '', /ran out of memory \(limit \d+ MB\)/, show(r, server));
      assert.equal(s.kernel_restarted, true);
    }
    const again = sc(await run({ language: 'javascript', session_id: JS_FLOOD, code: 'console.log(6 * 7)' }));
    assert.equal(again.stdout, '42\n', 'the JavaScript kernel runs again');
    return `${s.status}${s.status === 'success' ? '' : ' (kernel out of its own memory)'}, ${bytes} B result, ${memNote(mem)}; next call ran; ${await bystander.check()}`;
  });

kase(`print flood, bash (${BASH_PRINT_MB} MB)`, `success, cut; server RSS ≤ ${RSS_BOUND_MB} MB`, async () => {
  const [r, mem, bytes] = await flood({ language: 'bash', session_id: FLOOD, timeout: 90,
    code: `head -c ${BASH_PRINT_MB}M /dev/zero | tr '\\0' x; echo; echo END` });
  const s = sc(r);
  assert.equal(s.status, 'success', show(r, server));
  assert.equal(s.stdout_truncated, true);
  assert.ok(s.stdout.endsWith('END\n'));
  assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes`);
  withinBound(mem);
  await keptState();
  return `${s.status}, ${bytes} B result, ${memNote(mem)}; ${await bystander.check()}`;
});

kase('a million lines (python print per line)', `success; first and last lines kept; server RSS ≤ ${RSS_BOUND_MB} MB`, async () => {
  const [r, mem, bytes] = await flood({ language: 'python', session_id: FLOOD, timeout: 90, code: 'for i in range(1_000_000):\n    print(i)' });
  const s = sc(r);
  assert.equal(s.status, 'success', show(r, server));
  assert.ok(s.stdout.startsWith('0\n1\n2\n'), 'head kept');
  assert.ok(s.stdout.endsWith('999998\n999999\n'), 'tail kept');
  assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes`);
  withinBound(mem);
  await keptState();
  return `${s.status}, ${bytes} B result, ${memNote(mem)}; ${await bystander.check()}`;
});

kase('10,000 display_data (HTML) in one cell', `success; result ≤ 1 MB; server RSS ≤ ${RSS_BOUND_MB} MB`, async () => {
  const [r, mem, bytes] = await flood({ language: 'python', session_id: FLOOD, timeout: 120,
    code: "from IPython.display import HTML, display\nfor i in range(10_000):\n    display(HTML(f'<b>{i}</b>'))\nprint('END')" });
  const s = sc(r);
  assert.equal(s.status, 'success', show(r, server));
  assert.ok(s.stdout.endsWith('END\n'));
  assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes for ${s.outputs?.length} outputs`);
  withinBound(mem);
  await keptState();
  return `${s.status}, ${s.outputs?.length} outputs, ${bytes} B result, ${memNote(mem)}; ${await bystander.check()}`;
});

const REPLACEMENT = '\uFFFD';

// The byte cases' JavaScript runs in the JavaScript flood's sandbox: after the Python floods,
// the flood session's Python kernel may hold most of that sandbox's memory, and a JavaScript
// kernel started beside it can be killed by the sandbox's limit before it answers (seen once:
// "kernel exited during startup"), which says nothing about the bytes.
// JavaScript's byte cases run beside the flood's kernel, not in it: a kernel that printed its
// 500 MB to success holds most of its sandbox's memory and may thrash past a case's timeout.
const JS_BYTES = 'sess_corpusidle002';
const sessionFor = (language) => (language === 'javascript' ? JS_BYTES : FLOOD);

kase('invalid UTF-8 in output (python undecodable bytes and lone surrogate, javascript, bash)', 'each stream "a\\uFFFDb\\n": every valid character kept', async () => {
  const got = {};
  for (const [lang, code] of [
    // (Debian's ipykernel 6.17 does not forward what is written to fd 1 to the client at all,
    // so a Python fd write is no test of the server; its text goes through sys.stdout here.)
    ['python', "import sys\nsys.stdout.buffer.write(b'a\\xffb\\n') if hasattr(sys.stdout, 'buffer') else sys.stdout.write(b'a\\xffb\\n'.decode('utf-8', 'surrogateescape'))"],
    ['python (lone surrogate)', "import sys\nsys.stdout.write('a\\udcffb\\n')"],
    ['javascript', "process.stdout.write(Buffer.from([0x61, 0xff, 0x62, 0x0a]))"],
    ['bash', "printf 'a\\377b\\n'"],
  ]) {
    const language = lang.split(' ')[0];
    const r = await run({ language, session_id: sessionFor(language), code });
    got[lang] = sc(r).stdout ?? '';
    assert.equal(sc(r).status, 'success', `${lang}: ${show(r, server)}`);
  }
  for (const [lang, out] of Object.entries(got)) assert.equal(out, `a${REPLACEMENT}b\n`, `${lang}: ${JSON.stringify(out)}`);
  return `${Object.entries(got).map(([l, o]) => `${l} ${JSON.stringify(o)}`).join(', ')}; ${await bystander.check()}`;
});

kase('NUL in output (python, javascript, bash)', 'every line kept; the NUL carried as \\u0000 or U+FFFD', async () => {
  const got = {};
  for (const [lang, code] of [
    ['python', "print('a'); print('b\\x00c'); print('d')"],
    ['javascript', "console.log('a'); console.log('b\\u0000c'); console.log('d')"],
    ['bash', "echo a; printf 'b\\0c\\n'; echo d"],
  ]) {
    let r;
    try {
      r = await run({ language: lang, session_id: sessionFor(lang), code });
    } catch (err) {
      got[lang] = `JSON-RPC error ${err.code}: ${err.message}`;
      continue;
    }
    got[lang] = sc(r).status === 'success' ? sc(r).stdout : `${sc(r).status}: ${sc(r).error_message}`;
  }
  for (const [lang, out] of Object.entries(got)) assert.match(out, /^a\nb[\u0000\uFFFD]c\nd\n$/, `${lang}: ${JSON.stringify(out)}`);
  return `${Object.entries(got).map(([l, o]) => `${l} ${JSON.stringify(o)}`).join(', ')}; ${await bystander.check()}`;
});

kase('ANSI and control sequences in output (python, bash)', 'success; the text around them kept', async () => {
  const seq = "\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\x1b[2J\\x1b[H back\\rspace\\b end";
  const p = ok(await run({ language: 'python', session_id: FLOOD, code: `print("${seq}")` }));
  const b = ok(await run({ language: 'bash', session_id: FLOOD, code: `printf '${seq.replace(/\\x1b/g, '\\033').replace(/\\x07/g, '\\007')}\\n'` }));
  for (const out of [p.stdout, b.stdout]) {
    assert.ok(out.includes('red') && out.includes('end'), JSON.stringify(out));
  }
  return `python ${JSON.stringify(p.stdout).slice(0, 60)}, bash kept; ${await bystander.check()}`;
});

kase('a compromised kernel forges its own iopub traffic (key from its connection file)',
  `own output may be forged; floods on its parent, other parents, 25 × 20 MB after the cell, a 100 MB frame, bad signatures: server RSS ≤ ${RSS_BOUND_MB} MB; other sessions intact; the session runs again`,
  async () => {
    const sid = 'sess_corpusevil001';
    ok(await run({ language: 'python', session_id: sid, code: 'kept = 5' }));
    const watch = watchMemory(server);
    const r = await run({ language: 'python', session_id: sid, timeout: 30, code: `
import json, os, threading, time, uuid
from ipykernel.connect import get_connection_file
from jupyter_client.session import Session
cf = json.load(open(get_connection_file()))
k = get_ipython().kernel
sock = k.iopub_socket                       # the kernel's own iopub PUB socket (zmq)
sess = Session(key=cf['key'].encode(), signature_scheme=cf['signature_scheme'], username='forger')
bad = Session(key=b'not-the-key', signature_scheme=cf['signature_scheme'], username='forger')
parent = k.get_parent()
other = lambda: {'msg_id': uuid.uuid4().hex, 'msg_type': 'execute_request', 'session': uuid.uuid4().hex,
                 'username': 'x', 'date': '2026-01-01T00:00:00Z', 'version': '5.3'}
mb = 'F' * (1 << 20)
for i in range(50):                          # a forged flood on its own parent: it may lie about its output
    sess.send(sock, 'stream', {'name': 'stdout', 'text': mb}, parent=parent)
    if i % 10 == 0: time.sleep(0.05)
for i in range(50):                          # other parents (not the running request)
    sess.send(sock, 'stream', {'name': 'stdout', 'text': mb}, parent=other())
for i in range(1000):                        # wrong key
    bad.send(sock, 'stream', {'name': 'stdout', 'text': 'bad'}, parent=parent)
sock.send_multipart([b'garbage', b'<IDS|MSG>', b'sig', b'{', b'{', b'{', b'{'])
sess.send(sock, 'stream', {'name': 'stdout', 'text': 'H' * (100 << 20)}, parent=parent)   # a 100 MB frame
sess.send(sock, 'status', {'execution_state': 'idle'}, parent=other())
def after_cell():                            # 25 x 20 MB after the cell returned, between cells
    time.sleep(1)
    big = 'A' * (20 << 20)
    for _ in range(25):
        sess.send(sock, 'stream', {'name': 'stdout', 'text': big}, parent=other())
        sess.send(sock, 'display_data', {'data': {'text/plain': big}, 'metadata': {}}, parent=parent)
        time.sleep(0.1)
    open('/mnt/data/forge-done', 'w').write('1')
threading.Thread(target=after_cell, daemon=True).start()
print('forged')
` }, 240000);
    // Let the after-cell flood arrive while no cell runs: until its thread says it is done
    // (read from the host's side of the workspace, no cell run), at most 2 minutes. Under a
    // loaded parallel run it outlasted a fixed 12 s, and its forged oversized messages then
    // dropped the next cell's output with the connection.
    for (let end = Date.now() + 120000; Date.now() < end;) {
      const listed = sc(await server.call('list_artifacts', { session_id: sid })).artifacts ?? [];
      if (listed.some((a) => a.filename === 'forge-done')) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    const mem = watch.stop();
    const s = sc(r);
    const bytes = Buffer.byteLength(JSON.stringify(r));
    // Every check runs; the case fails with all that went wrong.
    const problems = [];
    const check = async (label, fn) => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${label}: ${String(err.message).split('\n')[0].slice(0, 160)}`);
      }
    };
    await check('second session', () => bystander.check('after the compromised kernel'));
    await check('idle session', async () => {
      const idle = ok(await run({ language: 'python', session_id: 'sess_corpusidle000', code: 'idle' }));
      assert.equal(String(idle.returnValue), 'True');
    });
    await check('the session after forging', async () => {
      let again = await run({ language: 'python', session_id: sid, code: "print('clean')" });
      if (sc(again).status !== 'success') again = await run({ language: 'python', session_id: sid, code: "print('clean')" });
      assert.ok(ok(again).stdout.endsWith('clean\n'), show(again, server));
      assert.ok(!ok(again).stdout.includes('AAAA'), 'output forged for an old parent reached a later cell');
    });
    await check('result budget', () => assert.ok(bytes <= RESULT_BUDGET, `forged result ${bytes} bytes`));
    await check('server memory', () => withinBound(mem));
    await server.call('close_session', { session_id: sid }).catch(() => {});
    const observed = `cell ${s.status}/${s.error_code ?? '-'} in ${s.duration_ms} ms, ${bytes} B result, ${memNote(mem)}`;
    assert.deepEqual(problems, [], `${problems.join(" | ")} — ${observed}`);
    return `${observed}; later cell clean; other sessions intact`;
  });

kase('an ordinary matplotlib PNG is carried once', 'one image block; the base64 not repeated in structuredContent; result ≤ 1 MB', async () => {
  const r = await run({ language: 'python', session_id: FLOOD, code: "import matplotlib.pyplot as plt, numpy as np\nplt.imshow(np.random.rand(200, 200))\nplt.show()" });
  ok(r);
  const images = (r.content ?? []).filter((c) => c.type === 'image');
  assert.equal(images.length, 1, `image blocks: ${images.length}`);
  const text = JSON.stringify(r);
  const copies = text.split(images[0].data.slice(0, 200)).length - 1;
  assert.equal(copies, 1, `the PNG's base64 appears ${copies} times in the result`);
  assert.ok(Buffer.byteLength(text) <= RESULT_BUDGET);
  return `1 image block of ${images[0].data.length} base64 chars, ${copies} copy; ${await bystander.check()}`;
});

kase('a 50 MB PNG display (past the 8 MB message limit once base64-encoded)',
  'the kernel saves it in /mnt/data/outputs and sends a note naming it; result ≤ 1 MB with the file among the artifacts, downloadable in full; server RSS ≤ 64 MB; client and server survive', async () => {
    // A sandbox with nothing else in it: the flood session's memory has been through the cases above.
    ok(await run({ language: 'python', session_id: PNG_SESSION, code: "kept = 'kept-png'" }));
    const [r, mem, bytes] = await flood({ language: 'python', session_id: PNG_SESSION, timeout: 120, code: `
import os, struct, zlib
from IPython.display import Image, display
w = h = 4082
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\\0' + os.urandom(w * 3) for _ in range(h))
png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 0)) + chunk(b'IEND', b'')
del raw
display(Image(data=png))
print(len(png))` });
    const s = sc(r);
    assert.equal(s.status, 'success', show(r, server));
    const size = Number(s.stdout.trim());
    assert.ok(size > 49e6, `PNG of ${size} bytes`);
    assert.ok(bytes <= RESULT_BUDGET, `result ${bytes} bytes`);
    const note = (s.outputs ?? []).map((o) => o.data?.['text/plain'] ?? '').join('\n');
    const saved = /saved to (\/mnt\/data\/outputs\/\S+\.png)/.exec(note);
    assert.ok(saved, `the display names the saved PNG: ${show(r, server)}`);
    const file = (s.artifacts ?? []).find((a) => a.path === saved[1]);
    assert.ok(file?.download_url, `the saved PNG is an artifact with a link: ${show(r, server)}`);
    const res = await fetch(file.download_url);
    assert.equal(res.status, 200);
    assert.equal((await res.arrayBuffer()).byteLength, size, 'the saved PNG is whole');
    withinBound(mem);
    await keptState('kept-png', PNG_SESSION);
    return `${bytes} B result for a ${size} B PNG; download whole; ${memNote(mem)}; ${await bystander.check()}`;
  });
