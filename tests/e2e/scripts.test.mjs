// The script library of seed 002 through the MCP SDK client: save_script, get_script,
// list_scripts, search_scripts and run_script (args, sessions, the package pre-flight, run
// counters), its files in seed 002's layout, and a library that survives a restart.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer } from './lib.mjs';

let server;
let client;
let scriptsDir;

const call = (name, args, timeout = 120000) => client.callTool({ name, arguments: args }, undefined, { timeout });
const sc = (r) => r.structuredContent;

before(async () => {
  scriptsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-scripts-'));
  server = await startServer({ name: 'scripts', args: ['--scripts-dir', scriptsDir] });
  client = server.client;
});

after(async () => {
  await server?.close();
  if (scriptsDir) fs.rmSync(scriptsDir, { recursive: true, force: true });
});

const ARGS = ['plain', 'with space', `it's "quoted"`, '$HOME `x` ; rm -rf /', 'ünï €'];

const PARSE = {
  name: 'parse-excel-report',
  description: 'Parses monthly Excel reports from finance, extracts summary rows, outputs CSV',
  language: 'python',
  code: 'import sys\nimport json\nprint(json.dumps(sys.argv[1:]))\n',
  tags: ['excel', 'finance', 'parsing'],
  packages: [],
  source_execution_id: 'exec_a1b2c3',
};

test('tools/list serves the script tools with their schemas', async () => {
  const { tools } = await client.listTools();
  for (const name of ['save_script', 'get_script', 'list_scripts', 'search_scripts', 'run_script']) {
    const t = tools.find((x) => x.name === name);
    assert.ok(t, `missing ${name}`);
    assert.equal(t.inputSchema.type, 'object');
    assert.equal(t.outputSchema.type, 'object');
  }
});

test('save_script (the seed example) writes seed 002 layout; get_script returns every field', async () => {
  const r = await call('save_script', PARSE);
  assert.equal(r.isError, false, JSON.stringify(r));
  const s = sc(r);
  assert.equal(s.success, true);
  assert.match(s.script_id, /^script_[0-9a-f]{12}$/);
  assert.equal(s.name, 'parse-excel-report');
  assert.equal(s.path, path.join(scriptsDir, 'parse-excel-report', 'script.py'));
  assert.match(s.saved_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(fs.readFileSync(s.path, 'utf8'), PARSE.code);
  const meta = JSON.parse(fs.readFileSync(path.join(scriptsDir, 'parse-excel-report', 'metadata.json'), 'utf8'));
  assert.equal(meta.description, PARSE.description);
  assert.deepEqual(meta.tags, PARSE.tags);
  const index = JSON.parse(fs.readFileSync(path.join(scriptsDir, 'index.json'), 'utf8'));
  assert.ok(index.scripts.some((x) => x.name === 'parse-excel-report'));

  const g = sc(await call('get_script', { name: 'parse-excel-report' }));
  assert.equal(g.success, true);
  assert.equal(g.code, PARSE.code);
  assert.equal(g.language, 'python');
  assert.deepEqual(g.tags, PARSE.tags);
  assert.deepEqual(g.packages, []);
  assert.equal(g.source_execution_id, 'exec_a1b2c3');
  assert.equal(g.created_at, s.saved_at);
  assert.equal(g.last_run_at, null);
  assert.equal(g.run_count, 0);
  assert.equal(g.last_run_success, null);
  assert.deepEqual(g.versions, []);
});

test('save_script and get_script refuse bad names, traversal and missing fields', async () => {
  for (const name of ['../etc', 'a/b', '..', '.hidden', '-x', 'a..b', 'x'.repeat(65), '']) {
    const r = await call('save_script', { name, language: 'python', code: 'print(1)' });
    assert.equal(r.isError, true, name);
    assert.equal(sc(r).error, 'invalid_params', name);
    assert.match(sc(r).message, /letters, digits/);
  }
  assert.equal(sc(await call('save_script', { name: 'ok', language: 'cobol', code: 'x' })).error, 'unsupported_language');
  assert.equal(sc(await call('save_script', { name: 'ok', language: 'python' })).error, 'invalid_params');
  const g = await call('get_script', { name: 'no-such-script' });
  assert.equal(g.isError, true);
  assert.equal(sc(g).error, 'script_not_found');
  assert.equal(sc(await call('get_script', { name: '../index.json' })).error, 'invalid_params');
  assert.ok(!fs.existsSync(path.join(scriptsDir, '..', 'etc')));
});

test('saving a name again keeps the previous version', async () => {
  await call('save_script', { name: 'versioned', description: 'v1', language: 'bash', code: 'echo one' });
  const r = sc(await call('save_script', { name: 'versioned', description: 'v2', language: 'bash', code: 'echo two' }));
  assert.equal(r.version, 2);
  const g = sc(await call('get_script', { name: 'versioned' }));
  assert.equal(g.code, 'echo two');
  assert.equal(g.versions.length, 1);
  assert.equal(g.versions[0].version, 1);
  assert.equal(fs.readFileSync(g.versions[0].path, 'utf8'), 'echo one');
});

test('list_scripts with language and tag filters', async () => {
  await call('save_script', { name: 'clean-csv-data', description: 'Cleans CSV rows', language: 'javascript', code: 'console.log(JSON.stringify(process.argv.slice(2)))', tags: ['csv'] });
  const all = sc(await call('list_scripts', {}));
  assert.ok(all.total_count >= 3);
  assert.equal(all.scripts.length, all.total_count);
  const py = sc(await call('list_scripts', { language: 'python', tag: 'finance' }));
  assert.equal(py.total_count, 1);
  assert.deepEqual(Object.keys(py.scripts[0]).sort(), ['description', 'language', 'last_run_at', 'name', 'run_count', 'tags']);
  assert.equal(py.scripts[0].name, 'parse-excel-report');
  assert.equal(sc(await call('list_scripts', { language: 'node' })).scripts.every((s) => s.language === 'javascript'), true);
  assert.equal(sc(await call('list_scripts', { tag: 'nothing-has-this' })).total_count, 0);
  assert.equal(sc(await call('list_scripts', { language: 'cobol' })).error, 'unsupported_language');
});

test('search_scripts ranks matches and says what matched', async () => {
  const r = sc(await call('search_scripts', { query: 'excel parsing' }));
  assert.equal(r.results[0].name, 'parse-excel-report');
  assert.ok(['name_match', 'tag_match', 'description_match'].includes(r.results[0].relevance));
  assert.equal(sc(await call('search_scripts', { query: 'finance' })).results[0].relevance, 'tag_match');
  assert.equal(sc(await call('search_scripts', { query: 'monthly' })).results[0].relevance, 'description_match');
  const code = sc(await call('search_scripts', { query: 'stringify' }));
  assert.equal(code.results[0].name, 'clean-csv-data');
  assert.equal(code.results[0].relevance, 'code_match');
  assert.equal(sc(await call('search_scripts', { query: 'clean' })).results[0].relevance, 'name_match');
  assert.deepEqual(sc(await call('search_scripts', { query: 'zzzqqq' })).results, []);
  assert.equal(sc(await call('search_scripts', { query: '' })).error, 'invalid_params');
});

test('run_script passes args intact in python, javascript and bash', async () => {
  await call('save_script', { name: 'args-sh', description: 'prints args', language: 'bash', code: 'for a in "$@"; do printf "%s\\n" "$a"; done' });
  const py = sc(await call('run_script', { name: 'parse-excel-report', args: ARGS, timeout_ms: 60000 }));
  assert.equal(py.success, true, JSON.stringify(py));
  assert.deepEqual(JSON.parse(py.stdout), ARGS);
  assert.match(py.execution_id, /^exec_/);
  assert.equal(py.language, 'python');
  const js = sc(await call('run_script', { name: 'clean-csv-data', args: ARGS }));
  assert.equal(js.success, true, JSON.stringify(js));
  assert.deepEqual(JSON.parse(js.stdout.trim()), ARGS);
  const sh = sc(await call('run_script', { name: 'args-sh', args: ARGS }));
  assert.equal(sh.success, true, JSON.stringify(sh));
  assert.deepEqual(sh.stdout.split('\n').slice(0, -1), ARGS);
  const none = sc(await call('run_script', { name: 'parse-excel-report' }));
  assert.equal(none.stdout, '[]\n');

  const g = sc(await call('get_script', { name: 'parse-excel-report' }));
  assert.equal(g.run_count, 2);
  assert.equal(g.last_run_success, true);
  assert.match(g.last_run_at, /^\d{4}-\d\d-\d\dT/);
  assert.ok(sc(await call('list_scripts', { tag: 'finance' })).scripts[0].last_run_at);
});

test('run_script records a failed run, and refuses unknown scripts and bad args', async () => {
  await call('save_script', { name: 'fails', description: 'raises', language: 'python', code: 'raise ValueError("boom")' });
  const r = await call('run_script', { name: 'fails' });
  assert.equal(sc(r).success, false);
  assert.match(sc(r).stderr, /boom/);
  const g = sc(await call('get_script', { name: 'fails' }));
  assert.equal(g.run_count, 1);
  assert.equal(g.last_run_success, false);

  const missing = await call('run_script', { name: 'nope' });
  assert.equal(missing.isError, true);
  assert.equal(sc(missing).error, 'script_not_found');
  assert.equal(sc(missing).status, 'setup_error');
  assert.equal(sc(await call('run_script', { name: '../x' })).error, 'invalid_params');
  assert.equal(sc(await call('run_script', { name: 'fails', args: [1] })).error, 'invalid_params');
  // A NUL never reaches the tool: the server refuses such strings in any request.
  await assert.rejects(call('run_script', { name: 'fails', args: ['a\u0000b'] }), /NUL/);
});

test('run_script in a named session keeps its state', async () => {
  await call('save_script', { name: 'counter', description: 'counts calls', language: 'python', code: 'n = globals().get("n", 0) + 1\nprint(n)' });
  const session_id = 'sess_scripts1';
  assert.equal(sc(await call('run_script', { name: 'counter', session_id })).stdout, '1\n');
  const second = sc(await call('run_script', { name: 'counter', session_id }));
  assert.equal(second.stdout, '2\n');
  assert.equal(second.session_id, session_id);
  assert.equal(sc(await call('run_script', { name: 'counter' })).stdout, '1\n', 'a fresh sandbox without session_id');
  await call('close_session', { session_id });
});

test('the pre-flight check names missing packages and the install_package call', async () => {
  await call('save_script', { name: 'needs-pkgs', description: 'needs', language: 'python', code: 'print("ran")', packages: ['json', 'no_such_pkg_cg'] });
  const r = sc(await call('run_script', { name: 'needs-pkgs' }));
  assert.equal(r.success, false);
  assert.doesNotMatch(r.stdout, /ran/);
  assert.match(r.stderr, /missing package no_such_pkg_cg/);
  assert.match(r.stderr, /install_package \{"package": "no_such_pkg_cg", "language": "python"\}/);
  assert.doesNotMatch(r.stderr, /missing package.*json,/);

  await call('save_script', { name: 'needs-js', description: 'needs', language: 'javascript', code: 'console.log("ran")', packages: ['no-such-npm-cg'] });
  const js = sc(await call('run_script', { name: 'needs-js' }));
  assert.equal(js.success, false);
  assert.match(js.stderr, /missing package no-such-npm-cg/);
  assert.match(js.stderr, /install_package \{"package":"no-such-npm-cg","language":"node"\}/);
});

test('a hand-made symlink in place of a script directory is never followed', async () => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-e2e-outside-'));
  try {
    fs.writeFileSync(path.join(outside, 'metadata.json'), '{"language": "python", "description": "x"}');
    fs.writeFileSync(path.join(outside, 'script.py'), 'print("outside")');
    fs.symlinkSync(outside, path.join(scriptsDir, 'linked'));
    const got = sc(await call('get_script', { name: 'linked' }));
    assert.equal(got.error, 'storage_error');
    assert.match(got.message, /symbolic link/);
    const save = sc(await call('save_script', { name: 'linked', language: 'python', code: 'print(2)' }));
    assert.equal(save.success, false);
    assert.equal(fs.readFileSync(path.join(outside, 'script.py'), 'utf8'), 'print("outside")');
  } finally {
    fs.unlinkSync(path.join(scriptsDir, 'linked'));
    fs.rmSync(outside, { recursive: true, force: true });
  }
});

test('save, search, run with args: the run is in search_execution_logs and get_execution_log', async () => {
  const saved = sc(await call('save_script', {
    name: 'tally-words',
    description: 'Counts the words of its arguments and prints a tally line',
    language: 'python',
    code: 'import sys\nwords = " ".join(sys.argv[1:]).split()\nprint(f"tally-marker {len(words)} words: {words[-1]}")\n',
    tags: ['text', 'counting'],
  }));
  assert.equal(saved.success, true, JSON.stringify(saved));
  const found = sc(await call('search_scripts', { query: 'tally words' }));
  assert.equal(found.results[0].name, 'tally-words');
  assert.equal(found.results[0].relevance, 'name_match');

  const run = sc(await call('run_script', { name: 'tally-words', args: ['one two', 'three', 'zebra-arg'] }));
  assert.equal(run.success, true, JSON.stringify(run));
  assert.equal(run.stdout, 'tally-marker 4 words: zebra-arg\n');

  const logged = sc(await call('search_execution_logs', { query: 'tally-marker 4 words' }));
  assert.equal(logged.total_count, 1, JSON.stringify(logged));
  assert.equal(logged.results[0].execution_id, run.execution_id);
  assert.equal(logged.results[0].status, 'success');
  assert.equal(logged.results[0].language, 'python');
  const entry = sc(await call('get_execution_log', { execution_id: run.execution_id }));
  assert.equal(entry.execution_id, run.execution_id);
  assert.equal(entry.tool, 'run_script');
  assert.equal(entry.stdout, 'tally-marker 4 words: zebra-arg\n');
  assert.match(entry.code, /print\(f"tally-marker/);
  assert.equal(entry.status, 'success');
  assert.equal(entry.exit_code, 0);
});

test('saved scripts survive a restart, and a corrupt index is rebuilt', async () => {
  await server.close();
  fs.writeFileSync(path.join(scriptsDir, 'index.json'), '{not json');
  server = await startServer({ name: 'scripts-again', args: ['--scripts-dir', scriptsDir] });
  client = server.client;
  const listed = sc(await call('list_scripts', {}));
  assert.ok(listed.scripts.some((s) => s.name === 'parse-excel-report'));
  const g = sc(await call('get_script', { name: 'parse-excel-report' }));
  assert.equal(g.run_count, 2);
  const r = sc(await call('run_script', { name: 'parse-excel-report', args: ['after restart'] }));
  assert.deepEqual(JSON.parse(r.stdout), ['after restart']);
  JSON.parse(fs.readFileSync(path.join(scriptsDir, 'index.json'), 'utf8'));
});
