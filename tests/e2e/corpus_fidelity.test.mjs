// Hostile corpus, fidelity (issue 23, point 11): one session used by an agent over MCP and
// by a notebook attached to the same kernels over the Jupyter gateway. The agent keeps its
// behaviour (input() asks for `stdin`, one-line errors, JSON values, sys.exit as an exit
// code, the call's stdin in JavaScript) on its own calls only; the notebook's cells, between
// the agent's, get the stock kernel, and a front end that forges the bridge's mark in its
// request's metadata gets the stock kernel too. tests/gateway/test_gateway_fidelity.py
// compares a front end's outputs with a stock ipykernel's through a real Jupyter Server.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { after, before } from 'node:test';

import { REPO_ROOT, callExec, sc, show, startHttpServer } from './lib.mjs';
import { caseTable } from './corpus.mjs';

const kase = caseTable('corpus_fidelity');
const TOKEN = crypto.randomBytes(16).toString('hex');
const SESSION = 'fidelity1';
const STOCK_STDIN = 'raw_input was called, but this frontend does not support input requests.';
const AGENT_STDIN = /input\(\) needs stdin: pass `stdin` with the call/;
const SYSTEM_EXIT_TB = ['An exception has occurred, use %tb to see the full traceback.\n', 'SystemExit: 3\n'];

// Runs cells in a kernel through the gateway's WebSocket (tests/gateway/gwclient.py, a real
// websocket-client) and prints, per cell, its execute_reply content and its iopub outputs.
// A cell is { code, metadata?, protocol? }: metadata goes into the request as sent.
const RUNNER = `
import json, re, sys
sys.path.insert(0, sys.argv[1])
import gwclient
url, token, kernel, cells = sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
ansi = re.compile(r"\\x1b\\[[0-9;]*[A-Za-z]")
sockets = {}
for cell in cells:
    protocol = cell.get("protocol", "legacy")
    if protocol not in sockets:
        sockets[protocol] = gwclient.KernelSocket(url, kernel, token, protocol=protocol, timeout=120)
        sockets[protocol].wait_ready(120)
    ks = sockets[protocol]
    msg = ks.new_msg("execute_request", {"code": cell["code"], "silent": False, "store_history": True,
                                         "user_expressions": {}, "allow_stdin": False,
                                         "stop_on_error": False}, "shell")
    msg["metadata"] = cell.get("metadata", {})
    msg_id = ks.send(msg)
    reply, outputs, idle = None, [], False
    while reply is None or not idle:
        m = ks.recv(120)
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if m.get("channel") == "shell":
            reply = m["content"]
        elif m["msg_type"] == "status":
            idle = m["content"]["execution_state"] == "idle"
        elif m["msg_type"] in ("stream", "error", "execute_result", "display_data"):
            content = m["content"]
            if "traceback" in content:
                content = dict(content, traceback=[ansi.sub("", t) for t in content["traceback"]])
            outputs.append({"type": m["msg_type"], **content})
    print(json.dumps({"code": cell["code"], "reply": reply, "outputs": outputs}), flush=True)
`;

let server;
let client;
const kernels = {}; // language -> kernel id (from the agent's results)

before(async () => {
  server = await startHttpServer({ args: ['--gateway-token', TOKEN] });
  ({ client } = await server.connect());
});

after(async () => {
  await server?.close();
});

const tail = () => `\n--- server stderr (tail) ---\n${server.stderrText().slice(-3000)}`;

/** The agent's call in SESSION; remembers the kernel it ran in. */
async function agent(language, code, extra = {}) {
  const r = await callExec(client, { language, session_id: SESSION, code, ...extra });
  const s = sc(r);
  if (s.kernel_id) kernels[language] = s.kernel_id;
  return r;
}

/** The notebook's cells in the agent's kernel of LANGUAGE: [{ code, reply, outputs }]. */
function notebook(language, cells) {
  const kernel = kernels[language];
  assert.ok(kernel, `no kernel_id for ${language} from the agent's results${tail()}`);
  const args = ['-c', RUNNER, path.join(REPO_ROOT, 'tests', 'gateway'), `http://127.0.0.1:${server.port}`, TOKEN,
    kernel, JSON.stringify(cells.map((c) => (typeof c === 'string' ? { code: c } : c)))];
  const proc = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c) => { stdout += c; });
  proc.stderr.on('data', (c) => { stderr += c; });
  return new Promise((resolve, reject) => proc.on('close', (code) => {
    if (code !== 0) reject(new Error(`the notebook's cells failed (${code}): ${stderr.slice(-2000)}${tail()}`));
    else resolve(stdout.trim().split('\n').map((line) => JSON.parse(line)));
  }));
}

const errorsOf = (cell) => cell.outputs.filter((o) => o.type === 'error');
const valueOf = (cell) => cell.outputs.find((o) => o.type === 'execute_result')?.data;

/** Checks the agent's behaviour on its calls (what tests/e2e/errors.test.mjs asserts). */
async function assertAgentBehaviour(what) {
  const input = await agent('python', 'name = input("name? ")');
  assert.equal(sc(input).stderr.trim().split('\n').length, 1, `${what}: one line\n${show(input, server)}`);
  assert.match(sc(input).stderr, AGENT_STDIN, `${what}: ${show(input, server)}`);
  assert.match(sc(input).stderr, /Cell In \[\d+\], line 1/, what);
  const value = await agent('python', "{'a': 1, 'b': [1, 2]}");
  assert.deepEqual(sc(value).returnValue, { a: 1, b: [1, 2] }, `${what}: ${show(value, server)}`);
  const exit = await agent('python', 'import sys\nsys.exit(3)');
  assert.equal(sc(exit).exit_code, 3, `${what}: ${show(exit, server)}`);
  assert.equal(sc(exit).stderr, '', `${what}: sys.exit(3) shows nothing`);
  const frames = await agent('python', 'from IPython.display import Image\nImage(data=b"x", format="bogus")');
  assert.doesNotMatch(sc(frames).stderr, /IPython\/core\/display\.py/, `${what}: IPython's frames left out`);
  assert.match(sc(frames).stderr, /ValueError: Cannot embed the 'bogus' image format/, what);
}

kase("the agent's calls keep the agent's behaviour", 'input() asks for stdin in one line, a dict is JSON, sys.exit(3) is exit code 3 and silent, no IPython frames', async () => {
  await assertAgentBehaviour('before any notebook');
  return `kernel ${kernels.python}`;
});

kase("a notebook attached to the agent's kernel sees the stock kernel", `input(): "${STOCK_STDIN}" with its traceback; a dict: text/plain only; sys.exit(3): SystemExit and IPython's note`, async () => {
  const [input, value, exit, frames] = await notebook('python', [
    'name = input("name? ")',
    "{'a': 1, 'b': [1, 2]}",
    'import sys\nsys.exit(3)',
    'from IPython.display import Image\nImage(data=b"x", format="bogus")',
  ]);
  assert.equal(input.reply.evalue, STOCK_STDIN, JSON.stringify(input));
  assert.equal(errorsOf(input).length, 1, JSON.stringify(input));
  assert.match(errorsOf(input)[0].traceback.join('\n'), /Traceback \(most recent call last\)[\s\S]*ipykernel\/kernelbase\.py/, JSON.stringify(input));
  assert.deepEqual(valueOf(value), { 'text/plain': "{'a': 1, 'b': [1, 2]}" }, JSON.stringify(value));
  assert.deepEqual(errorsOf(exit).map((e) => [e.ename, e.evalue, e.traceback]), [['SystemExit', '3', SYSTEM_EXIT_TB]], JSON.stringify(exit));
  assert.match(errorsOf(frames)[0]?.traceback.join('\n') ?? '', /IPython\/core\/display\.py:\d+, in Image\.__init__/, JSON.stringify(frames));
  return `evalue "${input.reply.evalue}"; value ${Object.keys(valueOf(value)).join(', ')}`;
});

kase("the agent's calls after the notebook's cells still get the agent's behaviour", 'the same checks as before the notebook (behaviour is per request, not per kernel)', async () => {
  await assertAgentBehaviour('after the notebook');
});

kase("a front end that forges the bridge's mark (metadata cellgate_agent: true) gets the stock kernel", 'the gateway removes the mark: stock input() error and text/plain only, over legacy and v1 framings', async () => {
  const forged = { cellgate_agent: true, cellId: 'forged' };
  const cells = await notebook('python', [
    { code: 'input()', metadata: forged },
    { code: "{'forged': True}", metadata: forged },
    { code: 'input()', metadata: forged, protocol: 'v1' },
    { code: "{'forged': True}", metadata: forged, protocol: 'v1' },
  ]);
  for (const [i, cell] of cells.entries()) {
    if (i % 2 === 0) assert.equal(cell.reply.evalue, STOCK_STDIN, JSON.stringify(cell));
    else assert.deepEqual(valueOf(cell), { 'text/plain': "{'forged': True}" }, JSON.stringify(cell));
  }
});

kase('JavaScript: a plain-data value is JSON for the agent, text/plain alone for a notebook', 'agent returnValue {a: [1, 2]}; notebook execute_result {text/plain}', async () => {
  const r = await agent('javascript', '({a: [1, 2]})');
  assert.deepEqual(sc(r).returnValue, { a: [1, 2] }, show(r, server));
  const [cell] = await notebook('javascript', ['({a: [1, 2]})']);
  assert.deepEqual(Object.keys(valueOf(cell) ?? {}), ['text/plain'], JSON.stringify(cell));
  const again = await agent('javascript', '({b: 3})');
  assert.deepEqual(sc(again).returnValue, { b: 3 }, show(again, server));
});

kase("JavaScript: the agent's stdin never reaches a notebook's cell", "a notebook's fs.readFileSync(0) reads nothing, not what the agent's last call had", async () => {
  const secret = `agent-only-${crypto.randomBytes(6).toString('hex')}`;
  const read = "require('fs').readFileSync(0, 'utf8')";
  const r = await agent('javascript', `console.log(${read})`, { stdin: `${secret}\n` });
  assert.equal(sc(r).stdout, `${secret}\n\n`, show(r, server));
  const [cell] = await notebook('javascript', [`JSON.stringify(${read})`]);
  assert.deepEqual(valueOf(cell), { 'text/plain': "'\"\"'" }, JSON.stringify(cell));
  const again = await agent('javascript', `console.log(${read})`, { stdin: `${secret}\n` });
  assert.equal(sc(again).stdout, `${secret}\n\n`, show(again, server));
});
