// export_notebook (issue 15, point 5): a session's executions with their outputs as an
// nbformat 4 notebook in its workspace, downloadable, valid under nbformat.validate (Debian's
// python3-nbformat); runs in other languages as markdown; a planted symlink is replaced, never
// followed; bad input refused.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { callExec, expectStatus, startServer } from './lib.mjs';

const PYTHON = '/usr/bin/python3'; // Debian's, with python3-nbformat (not a pyenv shim's)
let server;
let client;

before(async () => {
  server = await startServer({ name: 'notebook', args: ['--http-listen', '127.0.0.1:0'] });
  client = server.client;
});

after(async () => {
  await server?.close();
});

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

/** nbformat's own verdict on TEXT: { ok, error?, nbformat, nbformat_minor, cells }. */
function validate(text) {
  const script = [
    'import json, sys, nbformat',
    'nb = nbformat.reads(sys.stdin.read(), as_version=4)',
    'try:',
    '    nbformat.validate(nb); error = None',
    'except nbformat.ValidationError as e:',
    '    error = str(e)[:2000]',
    'print(json.dumps({"ok": error is None, "error": error, "nbformat": nb.nbformat, "minor": nb.nbformat_minor, "cells": len(nb.cells)}))',
  ].join('\n');
  return JSON.parse(execFileSync(PYTHON, ['-c', script], { input: text }).toString());
}

async function exported(args) {
  const r = await call('export_notebook', args);
  assert.equal(r.isError, false, JSON.stringify(r));
  const s = r.structuredContent;
  assert.ok(s.download_url, JSON.stringify(s));
  const text = await (await fetch(s.download_url)).text();
  return { s, text, nb: JSON.parse(text) };
}

test('a Python session exports as a valid notebook with its outputs in order', async () => {
  const sid = 'sess_notebookpy01';
  const cells = [
    'x = 6 * 7',
    "print('hi')\nx",
    'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()',
    "from IPython.display import HTML, display\nh = display(HTML('<b>first</b>'), display_id=True)\nh.update(HTML('<i>second</i>'))",
    '1 / 0',
  ];
  for (const code of cells) {
    const r = await callExec(client, { language: 'python', code, session_id: sid });
    assert.ok(r.structuredContent.status === (code === '1 / 0' ? 'execution_error' : 'success'), JSON.stringify(r.structuredContent));
  }
  expectStatus(await callExec(client, { language: 'bash', code: 'echo from bash', session_id: sid }), 'success', server);

  const { s, text, nb } = await exported({ session_id: sid });
  assert.equal(s.path, `/mnt/data/${sid}.ipynb`);
  assert.equal(s.language, 'python');
  assert.equal(s.cells, 5);
  assert.deepEqual(validate(text), { ok: true, error: null, nbformat: 4, minor: 5, cells: 6 });
  assert.equal(nb.metadata.kernelspec.name, 'python3');
  assert.equal(nb.metadata.language_info.name, 'python');
  const code = nb.cells.filter((c) => c.cell_type === 'code');
  assert.deepEqual(code.map((c) => c.source), cells);
  assert.deepEqual(code.map((c) => c.execution_count), [1, 2, 3, 4, 5]);
  // print then the value
  assert.deepEqual(code[1].outputs.map((o) => o.output_type), ['stream', 'execute_result']);
  assert.equal(code[1].outputs[0].text, 'hi\n');
  assert.equal(code[1].outputs[1].data['text/plain'], '42');
  // the plot
  const png = code[2].outputs.find((o) => o.output_type === 'display_data' && o.data['image/png']);
  assert.ok(png, JSON.stringify(code[2].outputs).slice(0, 500));
  assert.equal(Buffer.from(png.data['image/png'], 'base64').subarray(1, 4).toString(), 'PNG');
  // the display as last updated
  const html = code[3].outputs.filter((o) => o.output_type === 'display_data');
  assert.equal(html.length, 1);
  assert.equal(html[0].data['text/html'], '<i>second</i>');
  // the error
  const error = code[4].outputs.find((o) => o.output_type === 'error');
  assert.deepEqual([error.ename, error.evalue], ['ZeroDivisionError', 'division by zero']);
  // the bash run, shown as markdown
  const md = nb.cells.find((c) => c.cell_type === 'markdown');
  assert.match(md.source, /Ran in bash:[\s\S]*echo from bash/);
  // the file is in the workspace too, for the sandbox and read_artifact
  const again = await callExec(client, { language: 'python', code: `import json\nprint(len(json.load(open('${s.path}'))['cells']))`, session_id: sid });
  assert.equal(expectStatus(again, 'success', server).stdout, '6\n');
});

test('a JavaScript session exports with its kernel, and a name without .ipynb gets it', async () => {
  const sid = 'sess_notebookjs01';
  expectStatus(await callExec(client, { language: 'javascript', code: 'const a = 20;\nconsole.log(a + 1)', session_id: sid }), 'success', server);
  const { s, text, nb } = await exported({ session_id: sid, filename: 'out/js-run' });
  assert.equal(s.path, '/mnt/data/out/js-run.ipynb');
  assert.equal(validate(text).ok, true, validate(text).error);
  assert.equal(nb.metadata.kernelspec.language, 'javascript');
  assert.equal(nb.cells[0].outputs[0].text, '21\n');
  // asked for python instead: the JavaScript run becomes markdown
  const py = await exported({ session_id: sid, language: 'python', filename: 'as-python.ipynb' });
  assert.equal(py.s.cells, 0);
  assert.equal(py.nb.cells[0].cell_type, 'markdown');
  assert.equal(validate(py.text).ok, true);
});

test('a symlink the sandbox planted at the name is replaced, not followed', async () => {
  const sid = 'sess_notebooklink';
  const target = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-notebook-target-'));
  const victim = path.join(target, 'victim.txt');
  fs.writeFileSync(victim, 'untouched\n');
  try {
    const plant = `import os\nos.symlink('${victim}', '/mnt/data/evil.ipynb')\nos.symlink('/etc', '/mnt/data/etcdir')\nprint('planted')`;
    assert.equal(expectStatus(await callExec(client, { language: 'python', code: plant, session_id: sid }), 'success', server).stdout, 'planted\n');
    const { s } = await exported({ session_id: sid, filename: 'evil.ipynb' });
    assert.equal(s.path, '/mnt/data/evil.ipynb');
    assert.equal(fs.readFileSync(victim, 'utf8'), 'untouched\n');
    const check = await callExec(client, { language: 'python', code: "import os\nprint(os.path.islink('/mnt/data/evil.ipynb'))", session_id: sid });
    assert.equal(expectStatus(check, 'success', server).stdout, 'False\n');
    const through = await call('export_notebook', { session_id: sid, filename: 'etcdir/x.ipynb' });
    assert.equal(through.isError, true, JSON.stringify(through));
    assert.equal(through.structuredContent.error, 'invalid_path', JSON.stringify(through.structuredContent));
  } finally {
    fs.rmSync(target, { recursive: true, force: true });
  }
});

test('refusals: unknown session, bad language, bad filename', async () => {
  let r = await call('export_notebook', { session_id: 'sess_notebooknone' });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'session_not_found');
  expectStatus(await callExec(client, { language: 'python', code: 'pass', session_id: 'sess_notebookbad1' }), 'success', server);
  r = await call('export_notebook', { session_id: 'sess_notebookbad1', filename: '../../etc/x.ipynb' });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'invalid_filename', JSON.stringify(r.structuredContent));
  r = await call('export_notebook', { session_id: 'sess_notebookbad1', language: 'bash' });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'invalid_params', JSON.stringify(r.structuredContent));
});
