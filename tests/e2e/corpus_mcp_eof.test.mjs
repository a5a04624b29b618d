// Hostile corpus, stdio's end (issue 23, point 14): a request file piped into `cellgate
// mcp` reaches EOF while its tools/call still runs. Every call is answered and logged in
// the execution log (<state dir>/logs/executions-*.jsonl) before the server exits: one
// that finishes within --eof-grace with its result, one that does not as cancelled
// (c88e380 exited at once, the call unanswered and unlogged). Raw JSON-RPC through a shell
// pipe, as a user would type it: no SDK client closes its input in the middle of a call.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

import { caseTable } from './corpus.mjs';
import { serverBinary } from './lib.mjs';

const kase = caseTable('corpus_mcp_eof');
const EXIT_MS = 240000;
const dirs = [];

after(() => {
  for (const d of dirs) {
    if (fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(d)) continue; // never recurse into a mount
    fs.rmSync(d, { recursive: true, force: true });
  }
});

const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'corpus-pipe', version: '1' } } };
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (code) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call',
  params: { name: 'execute_code', arguments: { language: 'python', code, timeout: 300 } } });

// Runs `printf '%s\n' <lines> | cellgate mcp --state-dir D` with ENV added; returns what
// it wrote (parsed lines), its exit code, its stderr and the execution log's entries.
async function pipeInto(lines, env = {}) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-corpus-eof-'));
  dirs.push(state);
  const vars = Object.fromEntries(lines.map((l, i) => [`CG_LINE_${i}`, JSON.stringify(l)]));
  const script = `printf '%s\\n' ${lines.map((_, i) => `"$CG_LINE_${i}"`).join(' ')} | "$CG_BIN" mcp --state-dir "$CG_STATE"`;
  const proc = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...vars, ...env, CG_BIN: serverBinary(), CG_STATE: state } });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c) => { out += c; });
  proc.stderr.on('data', (c) => { err = (err + c).slice(-6000); });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), EXIT_MS);
    proc.on('exit', (c, signal) => { clearTimeout(timer); resolve(c ?? signal); });
  });
  const messages = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const logDir = path.join(state, 'logs');
  const entries = fs.existsSync(logDir)
    ? fs.readdirSync(logDir).filter((f) => /^executions-.*\.jsonl$/.test(f))
      .flatMap((f) => fs.readFileSync(path.join(logDir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)))
    : [];
  return { code, messages, stderr: err, entries };
}

kase('EOF while a 1 s cell runs (sleep 1 then print)', 'the call answered with its output; its execution logged; exit 0',
  async () => {
    const code = "import time\ntime.sleep(1)\nprint('after the sleep')";
    // A grace longer than the default, for a loaded machine's first sandbox; c88e380 knows
    // no such variable and ignores it.
    const r = await pipeInto([INIT, INITIALIZED, call(code)], { CELLGATE_EOF_GRACE: '120' });
    const answer = r.messages.find((m) => m.id === 1);
    assert.ok(answer, `no answer to the call; exit ${r.code}; stderr: ${r.stderr.slice(-800)}`);
    assert.equal(answer.result?.structuredContent?.status, 'success', JSON.stringify(answer).slice(0, 400));
    assert.equal(answer.result.structuredContent.stdout, 'after the sleep\n');
    const entry = r.entries.find((e) => e.code === code);
    assert.ok(entry, `no execution-log entry: ${JSON.stringify(r.entries).slice(0, 300)}`);
    assert.equal(entry.status, 'success');
    assert.equal(entry.execution_id, answer.result.structuredContent.execution_id);
    assert.equal(r.code, 0);
    return `answered: ${JSON.stringify(answer.result.structuredContent.stdout)}; log: ${entry.execution_id} ${entry.status}`;
  });

kase('EOF while a cell runs past --eof-grace (2 s here)', 'cancelled, and still answered and logged; exit 0', async () => {
  const code = "import time\nprint('started', flush=True)\ntime.sleep(600)";
  const r = await pipeInto([INIT, INITIALIZED, call(code)], { CELLGATE_EOF_GRACE: '2' });
  const answer = r.messages.find((m) => m.id === 1);
  assert.ok(answer, `no answer to the call; exit ${r.code}; stderr: ${r.stderr.slice(-800)}`);
  const s = answer.result?.structuredContent;
  assert.ok(s && s.status !== 'success', JSON.stringify(answer).slice(0, 400));
  assert.equal(answer.result.isError, true);
  const entry = r.entries.find((e) => e.code === code);
  assert.ok(entry, `no execution-log entry: ${JSON.stringify(r.entries).slice(0, 300)}`);
  assert.equal(entry.status, 'failed');
  assert.equal(r.code, 0);
  return `answered ${s.status} (${String(s.error_message).slice(0, 70)}); log: ${entry.status}`;
});
