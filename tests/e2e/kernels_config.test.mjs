// A kernel added by configuration only (issue 27, point 2): Debian's xeus-python (`xpython`,
// installed on the host, which the sandbox's host-/usr root shows) offered as the language
// `python-xeus`, alias `xeus`, by a kernel.json in a --kernelspecs directory. No code names
// it: the spec is the stock one's argv plus metadata.cellgate {aliases, title}. Through the
// official MCP SDK client: tools/list's enum, the tool's description and the instructions
// name it, list_sessions' languages has it, execute_code runs it (xeus-python's shell, not
// ipykernel), a session keeps its state, an unknown language's error lists it; a broken spec
// beside it is left out with a warning and the server still starts; --languages restricts
// what is offered. tests/gateway/test_gateway_kernels.py runs it through Jupyter Server.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { callExec, expectStatus, sc, show, startServer } from './lib.mjs';

const STOCK_SPEC = '/usr/share/jupyter/kernels/xpython/kernel.json';
// xeus-python's interpreter is the ipython-like shell of the xeus_python_shell package; an
// ipykernel kernel has ipykernel loaded instead.
const MARKER = "import sys\nprint('xeus_python_shell' in sys.modules, 'ipykernel' in sys.modules)\ntype(get_ipython()).__module__";

let specs;

// DIR/python-xeus/kernel.json (the stock xpython spec's argv, display name and language, plus
// metadata.cellgate) and DIR/broken/kernel.json (not JSON).
function writeSpecs() {
  const stock = JSON.parse(fs.readFileSync(STOCK_SPEC, 'utf8'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-kernelspecs-'));
  fs.mkdirSync(path.join(dir, 'python-xeus'));
  fs.writeFileSync(path.join(dir, 'python-xeus', 'kernel.json'), JSON.stringify({
    argv: stock.argv,
    display_name: stock.display_name,
    language: stock.language,
    metadata: { ...(stock.metadata ?? {}), cellgate: { aliases: ['xeus'], title: 'Python (xeus)' } },
  }, null, 2));
  fs.mkdirSync(path.join(dir, 'broken'));
  fs.writeFileSync(path.join(dir, 'broken', 'kernel.json'), '{"argv": [');
  return dir;
}

const languageEnum = (server, tool) =>
  server.tools.find((t) => t.name === tool)?.inputSchema?.properties?.language?.enum ?? [];

before(() => {
  if (!fs.existsSync(STOCK_SPEC)) throw new Error(`${STOCK_SPEC} missing: install Debian's xeus-python (scripts/setup.sh test)`);
  specs = writeSpecs();
});

after(() => {
  if (specs) fs.rmSync(specs, { recursive: true, force: true });
});

describe('--kernelspecs DIR with python-xeus', () => {
  let server;
  let client;

  before(async () => {
    server = await startServer({ name: 'kernels-config', args: ['--http-listen', 'off', '--kernelspecs', specs] });
    client = server.client;
  });

  after(async () => {
    await server?.close();
  });

  test('the broken spec beside it is left out with a warning; the server started', () => {
    const log = server.stderrText();
    assert.match(log, /warn: kernel spec \S*\/broken\/kernel\.json left out: /, log.slice(-4000));
    assert.match(log, /info: languages: .*\bpython-xeus\b/, log.slice(-4000));
    assert.doesNotMatch(log, /info: languages: .*\bbroken\b/);
  });

  test("tools/list: the language enums, execute_code's description and the instructions name it", () => {
    for (const tool of ['execute_code', 'start_session']) {
      const names = languageEnum(server, tool);
      for (const name of ['python', 'javascript', 'r', 'bash', 'python-xeus'])
        assert.ok(names.includes(name), `${name} in ${tool}'s enum ${JSON.stringify(names)}`);
      assert.ok(!names.includes('broken'), JSON.stringify(names));
    }
    const described = server.tools.find((t) => t.name === 'execute_code').description;
    assert.match(described, /\bpython-xeus\b/, described);
    const instructions = client.getInstructions() ?? '';
    assert.match(instructions, /\bpython-xeus\b/, instructions);
  });

  test("list_sessions' languages has it with its alias, kernel and display name", async () => {
    const r = await client.callTool({ name: 'list_sessions', arguments: {} });
    const languages = sc(r).languages;
    assert.ok(Array.isArray(languages), show(r, server));
    const xeus = languages.find((l) => l.name === 'python-xeus');
    const stock = JSON.parse(fs.readFileSync(STOCK_SPEC, 'utf8'));
    assert.deepEqual(xeus, { name: 'python-xeus', aliases: ['xeus'], kernel: 'python-xeus', display_name: stock.display_name },
      JSON.stringify(languages));
  });

  test("execute_code language 'xeus' runs in xeus-python, not ipykernel", async () => {
    const s = expectStatus(await callExec(client, { language: 'xeus', code: MARKER }), 'success', server);
    assert.equal(s.language, 'python-xeus');
    assert.equal(s.stdout, 'True False\n');
    assert.equal(s.returnValue, "'xeus_python_shell.shell'");
    // The same cell in cellgate's own python is ipykernel's.
    const py = expectStatus(await callExec(client, { language: 'python', code: MARKER }), 'success', server);
    assert.equal(py.stdout, 'False True\n');
  });

  test('a python-xeus session keeps its state across send_to_session', async () => {
    const started = await client.callTool({ name: 'start_session', arguments: { language: 'python-xeus' } });
    assert.equal(started.isError, false, show(started, server));
    const id = sc(started).session_id;
    assert.equal(sc(started).language, 'python-xeus');
    const send = (code) => client.callTool({ name: 'send_to_session', arguments: { session_id: id, code } }, undefined, { timeout: 120000 });
    expectStatus(await send('kept = 6 * 7'), 'success', server);
    const s = expectStatus(await send("import sys\nprint(kept, 'xeus_python_shell' in sys.modules)"), 'success', server);
    assert.equal(s.stdout, '42 True\n');
    // An error in it is an execution_error with Python's exception.
    const e = expectStatus(await send('1 / 0'), 'execution_error', server);
    assert.match(`${e.stderr}\n${e.error_message}`, /ZeroDivisionError/, JSON.stringify(e));
    const alias = expectStatus(await callExec(client, { language: 'xeus', session_id: id, code: 'print(kept + 1)' }), 'success', server);
    assert.equal(alias.stdout, '43\n');
    const closed = await client.callTool({ name: 'close_session', arguments: { session_id: id } }, undefined, { timeout: 120000 });
    assert.equal(closed.isError, false, show(closed, server));
  });

  test("an unknown language's error lists python-xeus and its alias", async () => {
    const s = expectStatus(await callExec(client, { language: 'cobol', code: 'DISPLAY 1' }), 'setup_error', server);
    assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE');
    assert.match(s.error_message, /python-xeus \(xeus\)/, s.error_message);
    assert.doesNotMatch(s.error_message, /broken/);
  });
});

describe('--languages python,python-xeus,bash', () => {
  let server;
  let client;

  before(async () => {
    // --pool: the default pool (python=1,javascript=1,bash=1) names javascript, which this
    // server does not offer; the tests' servers run without a pool.
    server = await startServer({
      name: 'kernels-config-only',
      args: ['--http-listen', 'off', '--kernelspecs', specs, '--languages', 'python,python-xeus,bash', '--pool', 'off'],
    });
    client = server.client;
  });

  after(async () => {
    await server?.close();
  });

  test('the enum is those three; javascript and r are refused; python-xeus runs', async () => {
    for (const tool of ['execute_code', 'start_session'])
      assert.deepEqual([...languageEnum(server, tool)].sort(), ['bash', 'python', 'python-xeus'], tool);
    assert.match(server.stderrText(), /info: languages: python, python-xeus, bash\n/);
    for (const language of ['javascript', 'js', 'r', 'xpython']) {
      const s = expectStatus(await callExec(client, { language, code: '1' }), 'setup_error', server);
      assert.equal(s.error_code, 'UNSUPPORTED_LANGUAGE', language);
      const offered = s.error_message.split('supported:')[1] ?? '';
      assert.match(offered, /python-xeus/, s.error_message);
      assert.doesNotMatch(offered, /javascript|\br\b/, s.error_message);
    }
    const r = await client.callTool({ name: 'list_sessions', arguments: {} });
    assert.deepEqual(sc(r).languages.map((l) => l.name), ['python', 'python-xeus', 'bash']);
    const s = expectStatus(await callExec(client, { language: 'python-xeus', code: MARKER }), 'success', server);
    assert.equal(s.stdout, 'True False\n');
  });
});

// A configured kernel that never answers: the start-up error gives the last three lines of
// what it printed (tslab, for one, prints an exception it caught as "Uncaught exception:",
// the error, then an object whose last line is "}"; the last line alone said nothing).
test('a kernel that never answers: the start-up error quotes its last three lines', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-silent-'));
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync(path.join(dir, 'silent'), { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'silent', 'kernel.json'), JSON.stringify({
    argv: ['/bin/sh', '-c', 'echo started >&2; echo "Uncaught exception: Error: no luck" >&2; echo "  code: 7" >&2; echo "}" >&2; exec sleep 600', '{connection_file}'],
    display_name: 'silent', language: 'silent',
  }));
  const server = await startServer({ name: 'kernels-silent', args: ['--http-listen', 'off', '--pool', 'off', '--kernelspecs', dir, '--kernel-start-timeout', '3'] });
  try {
    const s = expectStatus(await callExec(server.client, { language: 'silent', code: '1' }), 'setup_error', server);
    assert.match(s.error_message, /no kernel_info_reply within 3 s \(sockets not all bound; its last output: Uncaught exception: Error: no luck\n {2}code: 7\n\}\)/, s.error_message);
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
