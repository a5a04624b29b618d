// Hostile corpus, protocol and lifecycle: malformed MCP input over raw stdio (invalid JSON,
// huge ids, wrong types, NUL in strings, deep nesting, an oversized line, batches) answered
// with clear JSON-RPC errors while the server keeps serving; and `kill -9` of the server in
// the middle of work, leaving zero orphan containers, processes, cgroups or mounts after the
// next start on the same state dir.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

import { serverBinary, sleep } from './lib.mjs';
import { caseTable } from './corpus.mjs';

const kase = caseTable('corpus_protocol');
const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'corpus-raw', version: '1' } } };
const ANSWER_MS = 30000;
const dirs = [];

after(() => {
  for (const d of dirs) {
    if (fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(d)) continue; // never recurse into a mount
    fs.rmSync(d, { recursive: true, force: true });
  }
});

/**
 * Starts `cellgate mcp` on STATE with raw pipes. Returns { proc, send(text), sendRaw(buf),
 * next(ms) (the next parsed line, or throws after ms), lines (every raw line), exited }.
 */
function startRaw(state, args = []) {
  const proc = spawn(serverBinary(), ['mcp', '--state-dir', state, '--http-listen', 'off', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (c) => {
    stderr = (stderr + c.toString()).slice(-8000);
  });
  proc.stdin.on('error', () => {});
  const queue = [];
  const waiters = [];
  let pending = '';
  proc.stdout.on('data', (chunk) => {
    pending += chunk.toString('utf8');
    let i;
    while ((i = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        message = { unparsable: line.slice(0, 200) };
      }
      if (waiters.length) waiters.shift()(message);
      else queue.push(message);
    }
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    stderr: () => stderr,
    exited,
    send: (text) => proc.stdin.write(text + '\n'),
    sendRaw: (buf) => proc.stdin.write(buf),
    next(ms = ANSWER_MS) {
      if (queue.length) return Promise.resolve(queue.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms; server stderr: ${stderr.slice(-1500)}`)), ms);
        waiters.push((m) => {
          clearTimeout(timer);
          resolve(m);
        });
      });
    },
  };
}

function freshState(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

async function stop(s) {
  s.proc.stdin.end();
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 20000);
  await s.exited;
  clearTimeout(timer);
}

/** Sends TEXT and returns the answer, asserting the server is still alive. */
async function ask(s, text) {
  s.send(text);
  return s.next();
}

const rpcError = (m, codes, label) => {
  assert.ok(m.error, `${label}: no error: ${JSON.stringify(m).slice(0, 300)}`);
  assert.ok(codes.includes(m.error.code), `${label}: code ${m.error.code} (${m.error.message}), expected ${codes.join('/')}`);
  assert.equal(typeof m.error.message, 'string', label);
  assert.ok(m.error.message.length > 0 && m.error.message.length < 2000, `${label}: message ${m.error.message.length} chars`);
  return m.error.code;
};

/** Ping with a fresh id: the server is still serving. */
async function alive(s, id) {
  const m = await ask(s, JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
  assert.equal(m.id, id);
  assert.deepEqual(m.result, {});
}

kase('invalid JSON (truncated, garbage, invalid UTF-8, lone surrogates, trailing data)',
  'JSON-RPC -32700 with id null for each; the server keeps serving', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      const cases = [
        '{"jsonrpc":"2.0","id":1,"method":"ping"', '}{', 'null', '[', '"just a string"', '{"jsonrpc":"2.0","id":1,"method":"ping"} trailing',
        '{"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
        "{'single':'quotes'}", '{"a":NaN}', '{"a":1e999999}',
      ];
      const seen = {};
      for (const c of cases) {
        const m = await ask(s, c);
        seen[c.slice(0, 16)] = m.error?.code;
        assert.ok(m.error && [-32700, -32600].includes(m.error.code), `${JSON.stringify(c)}: ${JSON.stringify(m).slice(0, 300)}`);
      }
      s.sendRaw(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d, 0x0a])); // {"\xff\xfe":1}
      rpcError(await s.next(), [-32700], 'invalid UTF-8 bytes');
      s.sendRaw(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"pi\0ng"}\n'));
      rpcError(await s.next(), [-32700, -32600, -32601], 'a raw NUL byte');
      await ask(s, JSON.stringify(INIT));
      await alive(s, 'still-here');
      return `${cases.length + 2} malformed lines: codes ${[...new Set(Object.values(seen))].join('/')} ; ping answered`;
    } finally {
      await stop(s);
    }
  });

kase('client text cut inside a UTF-8 character (clientInfo, an unknown argument, tool, method, language, execution id)',
  'every excerpt in a message ends on a whole character: each call answered, the server keeps serving', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      // 'é' is two bytes: after 63 ASCII bytes it straddles a 64-byte cut (127: a 128-byte one).
      const at64 = (c) => c.repeat(63) + 'é'.repeat(8);
      const at128 = (c) => c.repeat(127) + 'é'.repeat(8);
      const init = structuredClone(INIT);
      init.params.clientInfo = { name: at64('n'), version: 'v'.repeat(31) + 'é' };
      assert.ok((await ask(s, JSON.stringify(init))).result, 'initialize with a long non-ASCII client name');
      const callWith = (id, name, args) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
      const texts = [
        callWith(1, 'execute_code', { language: 'python', code: 'print(1)', [at64('k')]: 1 }),
        callWith(2, 'list_sessions', { [at64('k')]: 1 }),
        callWith(3, at128('t'), {}),
        JSON.stringify({ jsonrpc: '2.0', id: 4, method: at128('m') }),
        callWith(5, 'execute_code', { language: at64('l'), code: 'print(1)' }),
        callWith(6, 'get_execution_log', { execution_id: at64('e') }),
        callWith(7, 'list_sessions', {}),
      ];
      const notes = [];
      for (const text of texts) {
        const m = await ask(s, text);
        const id = JSON.parse(text).id;
        assert.equal(m.id, id, `answer to ${id}: ${JSON.stringify(m).slice(0, 300)}`);
        const message = m.error?.message ?? m.result?.content?.[0]?.text ?? '';
        assert.ok(!message.includes('\ufffd'), `answer to ${id} holds a cut character: ${message.slice(0, 200)}`);
        notes.push(`${id}:${m.error ? m.error.code : m.result.isError ? 'isError' : 'ok'}`);
      }
      await alive(s, 'after-cuts');
      return notes.join(' ');
    } finally {
      await stop(s);
    }
  });

kase('huge and odd ids (2^64, 1e308, -0, 1.5, 10,000-char string, object, array, bool)',
  'valid ids echoed exactly; invalid ids -32600 (or -32700 for out-of-range numbers); never a crash', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      await ask(s, JSON.stringify(INIT));
      const notes = [];
      for (const [idText, valid] of [['18446744073709551616', false], ['1e308', true], ['-0', true], ['1.5', true],
        ['9007199254740993', true], [JSON.stringify('i'.repeat(10000)), true], ['{}', false], ['[1]', false], ['true', false]]) {
        const m = await ask(s, `{"jsonrpc":"2.0","id":${idText},"method":"ping"}`);
        if (m.result) {
          assert.ok(valid, `id ${idText.slice(0, 20)} accepted`);
          assert.equal(JSON.stringify(m.id), JSON.stringify(JSON.parse(idText)), `id ${idText.slice(0, 20)} not echoed`);
          notes.push(`${idText.slice(0, 12)}:echoed`);
        } else {
          notes.push(`${idText.slice(0, 12)}:${rpcError(m, [-32600, -32700], `id ${idText.slice(0, 20)}`)}`);
        }
      }
      await alive(s, 7);
      return notes.join(' ');
    } finally {
      await stop(s);
    }
  });

kase('wrong types and out-of-range arguments (method, params, arguments, code, timeout, language, session_id, stdin)',
  'JSON-RPC -32600/-32602, or a tool result with INVALID_PARAMS / invalid_params; nothing runs', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      await ask(s, JSON.stringify(INIT));
      // An existing session, so that read_artifact's wrong-typed path is judged on its type.
      const up = await ask(s, JSON.stringify({ jsonrpc: '2.0', id: 'up', method: 'tools/call', params: { name: 'upload_file', arguments: { session_id: 'sess_corpusproto01', filename: 'a.txt', content_base64: 'eA==' } } }));
      assert.equal(up.result?.isError, false, JSON.stringify(up).slice(0, 300));
      const callWith = (id, args, name = 'execute_code') => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
      const bad = [
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 5 }),
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: [] }),
        JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'execute_code', arguments: 'print(1)' } }),
        JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: ['execute_code'], arguments: {} } }),
        callWith(5, { language: 'python', code: 123 }),
        callWith(6, { language: 'python', code: 'print(1)', timeout: 'abc' }),
        callWith(7, { language: 'python', code: 'print(1)', timeout: -1 }),
        callWith(8, { language: 'python', code: 'print(1)', timeout: 1e9 }),
        callWith(9, { language: null, code: 'print(1)' }),
        callWith(10, { language: 'python', code: 'print(1)', session_id: {} }),
        callWith(11, { language: 'python', code: 'print(1)', session_id: 's'.repeat(10000) }),
        callWith(12, { language: 'python', code: 'print(1)', stdin: 5 }),
        callWith(13, { language: 'python', code: 'print(1)', timeout_ms: 1e300 }),
        callWith(14, { language: 'python', code: 'print(1)', unexpected: true }),
        callWith(15, { session_id: 'sess_corpusproto01', path: 5 }, 'read_artifact'),
        callWith(16, { filename: 5, content_base64: 'eA==' }, 'upload_file'),
        callWith(17, { language: 'python', code: 'print(1)', files: 'not-a-map' }),
        JSON.stringify({ jsonrpc: '2.0', id: 18, method: 'tools/list', params: { cursor: 5 } }),
      ];
      const codes = {};
      for (const text of bad) {
        const m = await ask(s, text);
        const id = JSON.parse(text).id;
        assert.equal(m.id, id, `answer to ${id}`);
        if (m.error) {
          codes[id] = rpcError(m, [-32600, -32602, -32601], `request ${id}`);
        } else if (m.result?.isError) {
          const sc = m.result.structuredContent ?? {};
          assert.ok(sc.error_code === 'INVALID_PARAMS' || sc.error === 'invalid_params' || sc.error === 'invalid_path' || sc.error === 'invalid_filename',
            `request ${id}: ${JSON.stringify(sc).slice(0, 300)}`);
          assert.ok(!('stdout' in sc) || sc.stdout === '', `request ${id} ran code`);
          codes[id] = sc.error_code ?? sc.error;
        } else if (id === 18) {
          codes[id] = 'listed'; // a cursor of the wrong type on an unpaginated list is harmless
        } else {
          assert.fail(`request ${id} accepted: ${JSON.stringify(m).slice(0, 300)}`);
        }
      }
      await alive(s, 99);
      return `${bad.length} requests: ${Object.entries(codes).map(([k, v]) => `${k}:${v}`).join(' ')}`;
    } finally {
      await stop(s);
    }
  });

kase('NUL in strings (code, session_id, method, keys, filename)', 'JSON-RPC -32602 (or -32600/-32601) naming the problem; nothing runs', async () => {
  const s = startRaw(freshState('cg-corpus-raw-'));
  try {
    await ask(s, JSON.stringify(INIT));
    const texts = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)\\u0000print(2)"}}}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)","session_id":"sess\\u0000x"}}}',
      '{"jsonrpc":"2.0","id":3,"method":"pi\\u0000ng"}',
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","co\\u0000de":"print(1)"}}}',
      '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"upload_file","arguments":{"filename":"a\\u0000.txt","content_base64":"eA=="}}}',
      '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"execute_\\u0000code","arguments":{}}}',
    ];
    const codes = [];
    for (const t of texts) {
      const m = await ask(s, t);
      const id = JSON.parse(t).id;
      if (id === 4 && m.id === null) {
        // A NUL in an object key cannot be held by the server's JSON library (jansson): the
        // line is a parse error, and JSON-RPC 2.0 answers a parse error with id null.
        codes.push(`${rpcError(m, [-32700], 'NUL in a key')}(id null)`);
        continue;
      }
      assert.equal(m.id, id, `the answer to request ${id} carries id ${m.id} (${m.error?.code} ${m.error?.message}): the client cannot match it`);
      codes.push(rpcError(m, [-32602, -32600, -32601], `NUL request ${m.id}`));
    }
    await alive(s, 'after-nul');
    return `codes ${codes.join(',')}`;
  } finally {
    await stop(s);
  }
});

kase('deep nesting (100,000-deep params, 1,000-deep arguments) and batches (empty, 1,000 pings)',
  'a clear error for each (-32700/-32600/-32602), or answers for a batch; the server keeps serving', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      await ask(s, JSON.stringify(INIT));
      const notes = [];
      const deep = `{"jsonrpc":"2.0","id":1,"method":"ping","params":${'['.repeat(100000)}${']'.repeat(100000)}}`;
      notes.push(`100k-deep:${rpcError(await ask(s, deep), [-32700, -32600, -32602], '100,000-deep')}`);
      let args = '"x"';
      for (let i = 0; i < 1000; i++) args = `{"a":${args}}`;
      const m2 = await ask(s, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"1","nested":${args}}}}`);
      if (m2.error) notes.push(`1000-deep:${rpcError(m2, [-32700, -32600, -32602], '1,000-deep')}`);
      else {
        assert.equal(m2.result?.structuredContent?.error_code, 'INVALID_PARAMS', JSON.stringify(m2).slice(0, 300));
        notes.push('1000-deep:INVALID_PARAMS');
      }
      notes.push(`[]:${rpcError(await ask(s, '[]'), [-32600, -32700], 'empty batch')}`);
      const batch = JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: 1000 + i, method: 'ping' })));
      const b = await ask(s, batch);
      if (Array.isArray(b)) {
        assert.equal(b.length, 1000);
        notes.push('batch:1000 answers');
      } else {
        notes.push(`batch:${rpcError(b, [-32600, -32700], 'batch of 1,000')}`);
      }
      await alive(s, 'after-nesting');
      return notes.join(' ');
    } finally {
      await stop(s);
    }
  });

kase('an oversized line (80 MiB) and a flood of 10,000 unknown notifications',
  'a clear error for the line (-32600/-32700, id null), no answer to notifications, then normal service', async () => {
    const s = startRaw(freshState('cg-corpus-raw-'));
    try {
      await ask(s, JSON.stringify(INIT));
      // The stdio line limit is max(64 MiB, the upload limit in base64 + 1 MiB): about 71 MB
      // with the default 50 MB uploads; 80 MiB is over it.
      const big = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'p'.repeat(80 * 1024 * 1024)}"}}`;
      const m = await ask(s, big);
      const code = rpcError(m, [-32600, -32700], 'oversized line');
      for (let i = 0; i < 10000; i++) s.send(JSON.stringify({ jsonrpc: '2.0', method: `notifications/corpus${i}` }));
      await alive(s, 'after-flood');
      // A response the server never asked for, and one with both result and error.
      s.send(JSON.stringify({ jsonrpc: '2.0', id: 'nobody-asked', result: {} }));
      s.send(JSON.stringify({ jsonrpc: '2.0', id: 'both', result: {}, error: { code: 1, message: 'x' } }));
      await alive(s, 'after-stray');
      const r = await ask(s, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code: 'x = 1\nx + 1' } } }));
      assert.equal(r.result?.structuredContent?.returnValue, '2', JSON.stringify(r).slice(0, 500));
      return `oversized ${code} (${m.error.message.slice(0, 60)}); notifications unanswered; a cell ran after`;
    } finally {
      await stop(s);
    }
  });

/** Containers runc knows under this state dir (any runtime-* root). */
function runcContainers(state) {
  const found = [];
  for (const name of fs.readdirSync(state)) {
    if (!name.startsWith('runtime-')) continue;
    const out = execFileSync('runc', ['--root', path.join(state, name), 'list', '-q'], { encoding: 'utf8' });
    found.push(...out.split('\n').filter(Boolean));
  }
  return found;
}

/** Host pids in the cgroups of the given containers (pids controller), with their cgroup dirs. */
function cgroupsOf(ids) {
  const dirs = [];
  const pids = [];
  for (const root of ['/sys/fs/cgroup/pids/cellgate', '/sys/fs/cgroup/memory/cellgate', '/sys/fs/cgroup/cellgate']) {
    for (const id of ids) {
      const d = path.join(root, id);
      if (!fs.existsSync(d)) continue;
      dirs.push(d);
      const procs = path.join(d, 'cgroup.procs');
      if (fs.existsSync(procs)) pids.push(...fs.readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number));
    }
  }
  return { dirs, pids: [...new Set(pids)] };
}

kase('kill -9 of the server mid-work leaves zero orphans after the next start on the same state dir',
  'no runc container, sandbox process, cgroup, mount or old instance dir left; the new server serves', async () => {
    const state = freshState('cg-corpus-crash-');
    const first = startRaw(state);
    await ask(first, JSON.stringify(INIT));
    const call = (id, language, code, sid) => first.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language, code, session_id: sid, timeout: 120 } } }));
    call(1, 'python', 'x = 1', 'crash_one');
    assert.equal((await first.next()).result?.structuredContent?.status, 'success');
    call(2, 'javascript', 'let y = 2', 'crash_one');
    assert.equal((await first.next(90000)).result?.structuredContent?.status, 'success');
    call(3, 'bash', 'nohup sleep 1000 >/dev/null 2>&1 & echo started', 'crash_two');
    assert.equal((await first.next()).result?.structuredContent?.status, 'success');
    call(4, 'python', 'import time\ntime.sleep(100)', 'crash_two'); // still running at the kill
    await sleep(1500);
    const ids = runcContainers(state);
    assert.equal(ids.length, 2, `two sandboxes run: ${ids}`);
    const before = cgroupsOf(ids);
    assert.ok(before.pids.length >= 4, `sandbox processes found: ${before.pids}`);
    const mountsBefore = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(state)).length;
    first.proc.kill('SIGKILL');
    await first.exited;

    const second = startRaw(state);
    try {
      const init = await ask(second, JSON.stringify(INIT)); // start-up clean-up happens before the answer
      assert.ok(init.result, 'the new server initializes');
      // Removal may finish in the background right after start-up; give it a few seconds.
      let left;
      for (let i = 0; i < 40; i++) {
        const alivePids = before.pids.filter((p) => fs.existsSync(`/proc/${p}`));
        left = { containers: runcContainers(state), pids: alivePids, cgroups: cgroupsOf(ids).dirs,
          mounts: fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(state)) };
        if (!left.containers.length && !left.pids.length && !left.cgroups.length && !left.mounts.length) break;
        await sleep(250);
      }
      assert.deepEqual(left.containers, [], 'orphan containers');
      assert.deepEqual(left.pids, [], 'orphan sandbox processes');
      assert.deepEqual(left.cgroups, [], 'orphan cgroups');
      assert.deepEqual(left.mounts, [], 'orphan mounts');
      const instances = fs.readdirSync(path.join(state, 'instances'));
      assert.equal(instances.length, 1, `old instance dirs left: ${instances}`);
      const r = await ask(second, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'execute_code', arguments: { language: 'python', code: '1 + 1', session_id: 'crash_one' } } }));
      assert.equal(r.result?.structuredContent?.returnValue, '2');
      return `killed with 2 sandboxes, ${before.pids.length} processes, ${before.dirs.length} cgroups, ${mountsBefore} mounts; after restart 0 of each; new server serves`;
    } finally {
      await stop(second);
      assert.deepEqual(runcContainers(state), [], 'containers left after a clean stop');
    }
  });
