// Hostile corpus, stores (issue 23 points 7, 8, 15 and 16): what a client can grow on the
// server's own disk, and the work it makes the server's loop do.
// - The script library: a bounded loop of saves past its caps (versions kept, scripts,
//   bytes), each refused or pruned with a clear answer; the library stays under its bytes;
//   the loop answers a pinger while the saves are on disk.
// - The notebook record: runs past its 64 MB cap never take notebook.jsonl past it; exporting
//   the full record answers a pinger meanwhile and keeps the server's peak memory bounded.
// - run_script's execution log records the script's own code, name and version.
// - An on/off flag alone (`cellgate mcp --keep-sessions`) starts the server.
// The caps are set through CELLGATE_* variables, so that a build without them still starts
// (and fails the case instead of every case). No case asserts on wall-clock time: "the loop
// answers" is the order in which answers arrive.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { callExec, sc, show } from './lib.mjs';
import { caseTable, startCorpusServer, watchMemory } from './corpus.mjs';

const kase = caseTable('corpus_stores');

const SCRIPT_VERSIONS = 5;
const MAX_SCRIPTS = 3;
const MAX_SCRIPTS_MB = 1;
const CODE_BYTES = 300 * 1024; // a save's code: four fill the library's megabyte
const NOTEBOOK_MAX = 64 * 1024 * 1024; // the default --notebook-max-mb
const CELL_CODE = 4 * 1024 * 1024; // a run's code: 17 runs pass the notebook's cap
const EXPORT_HWM_MB = 64; // what exporting the full record may add to the server's peak

let server;

before(async () => {
  server = await startCorpusServer({
    name: 'corpus-stores',
    args: ['--http-listen', 'off', '--pool', 'off'],
    env: {
      CELLGATE_SCRIPT_VERSIONS: String(SCRIPT_VERSIONS),
      CELLGATE_MAX_SCRIPTS: String(MAX_SCRIPTS),
      CELLGATE_MAX_SCRIPTS_MB: String(MAX_SCRIPTS_MB),
      CELLGATE_MAX_CODE_BYTES: String(CELL_CODE + 1024),
    },
  });
});

after(async () => {
  await server?.close();
});

/** Bytes of the regular files below DIR (no links followed). */
function treeBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(p);
    else if (entry.isFile()) total += fs.statSync(p).size;
  }
  return total;
}

/** Every file named NAME below DIR. */
function findFiles(dir, name, found = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory() && !entry.name.startsWith('workspace')) findFiles(p, name, found);
    else if (entry.isFile() && entry.name === name) found.push(p);
  }
  return found;
}

/**
 * Sends every call of CALLS at once, then pings SRV one ping at a time until they are all answered
 * (at most PINGS pings). Returns { results, answeredWhileBusy }: how many pings were answered
 * while at least one of the calls was still out. A loop that does the calls' work itself answers
 * each ping only after every call sent before it (stdio keeps the order): none.
 */
async function withPinger(srv, calls, pings = 100000) {
  let out = calls.length;
  const results = calls.map((c) =>
    c().then(
      (r) => { out--; return r; },
      (e) => { out--; return e; },
    ),
  );
  let answeredWhileBusy = 0;
  for (let i = 0; i < pings && out > 0; i++) {
    await srv.client.ping({ timeout: 120000 });
    if (out > 0) answeredWhileBusy++;
  }
  return { results: await Promise.all(results), answeredWhileBusy };
}

const save = (name, code, extra = {}) =>
  server.call('save_script', { name, language: 'python', code, description: `${name} script`, ...extra });

const fill = (n, mark) => `# ${mark}\n` + `print(${JSON.stringify(mark)})\n` + '#'.repeat(n) + '\n';

kase(
  'save_script 12 times under one name (--script-versions 5)',
  'the newest 5 earlier versions kept, older ones removed from disk and said so',
  async () => {
    let last;
    for (let i = 1; i <= 12; i++) {
      last = await save('often', `print(${i})\n`);
      assert.equal(sc(last).success, true, show(last, server));
    }
    const s = sc(last);
    const versions = fs.readdirSync(path.join(server.stateDir, 'scripts', 'often', 'versions'));
    assert.equal(versions.length, SCRIPT_VERSIONS, `versions on disk: ${versions.join(',')}`);
    assert.equal(s.version, 12, show(last, server));
    assert.equal(s.versions_kept, SCRIPT_VERSIONS, show(last, server));
    assert.equal(s.versions_pruned, 1, show(last, server));
    assert.match(last.content[0].text, /Kept the newest 5 earlier versions/);
    const got = sc(await server.call('get_script', { name: 'often' }));
    assert.deepEqual(got.versions.map((v) => v.version), [7, 8, 9, 10, 11]);
    return `versions/ holds ${versions.sort().join(',')}; answer: version ${s.version}, ${s.versions_pruned} pruned`;
  },
);

kase(
  `a new script past --max-scripts ${MAX_SCRIPTS}`,
  'library_full naming --max-scripts; no directory left',
  async () => {
    for (const name of ['second', 'third']) assert.equal(sc(await save(name, 'x = 1\n')).success, true);
    const r = await save('fourth', 'x = 4\n');
    assert.equal(r.isError, true, show(r, server));
    assert.equal(sc(r).error, 'library_full', show(r, server));
    assert.match(sc(r).message, /--max-scripts 3/);
    assert.ok(!fs.existsSync(path.join(server.stateDir, 'scripts', 'fourth')), 'no directory for the refused script');
    const again = await save('second', 'x = 2\n');
    assert.equal(sc(again).success, true, 'an existing name still saves');
    return sc(r).message.slice(0, 90);
  },
);

kase(
  'run_script, then search_execution_logs and get_execution_log',
  "the entry's code and code_preview are the script's code, with its name and version; not cellgate's wrapper",
  async () => {
    const code = 'import sys\nprint("logged-script", sys.argv[1:])\n';
    assert.equal(sc(await save('second', code)).success, true);
    const run = await server.call('run_script', { name: 'second', args: ['a1'] });
    assert.equal(sc(run).status, 'success', show(run, server));
    const id = sc(run).execution_id;
    const found = sc(await server.call('search_execution_logs', { query: 'logged', limit: 10 }));
    const entry = (found.results ?? found.executions ?? []).find((e) => e.execution_id === id);
    assert.ok(entry, `the run is found: ${JSON.stringify(found).slice(0, 400)}`);
    assert.ok(!/b64decode|exec\(__import__/.test(entry.code_preview), `code_preview: ${entry.code_preview}`);
    assert.ok(entry.code_preview.startsWith('import sys'), `code_preview: ${entry.code_preview}`);
    const full = sc(await server.call('get_execution_log', { execution_id: id }));
    assert.equal(full.code, code);
    assert.equal(full.script?.name, 'second', JSON.stringify(full.script));
    assert.equal(full.script?.version, 3, JSON.stringify(full.script));
    assert.deepEqual(full.script?.args, ['a1']);
    return `code_preview "${entry.code_preview.slice(0, 30)}...", script ${JSON.stringify(full.script)}`;
  },
);

kase(
  `40 saves of ${CODE_BYTES / 1024} KB at once past --max-scripts-mb ${MAX_SCRIPTS_MB}, a pinger beside them`,
  'refused with library_full naming --max-scripts-mb once full; the library stays under 1 MB',
  async () => {
    const calls = [];
    for (let i = 0; i < 40; i++) calls.push(() => save('third', fill(CODE_BYTES, `big-${i}`)));
    const { results, answeredWhileBusy } = await withPinger(server, calls);
    const refused = results.filter((r) => r?.isError && sc(r).error === 'library_full');
    const saved = results.filter((r) => r?.structuredContent?.success === true);
    const other = results.filter((r) => !refused.includes(r) && !saved.includes(r));
    assert.equal(other.length, 0, `neither saved nor refused: ${show(other[0], server)}`);
    assert.ok(refused.length > 0, `none refused: ${saved.length} saved`);
    assert.match(sc(refused[0]).message, /--max-scripts-mb/);
    const bytes = treeBytes(path.join(server.stateDir, 'scripts'));
    assert.ok(bytes <= MAX_SCRIPTS_MB * 1024 * 1024, `the library holds ${bytes} bytes`);
    return `${saved.length} saved, ${refused.length} refused, library ${(bytes / 1048576).toFixed(2)} MB, ${answeredWhileBusy} pings answered meanwhile`;
  },
);

kase(
  'save_script x10 at once on a library of 5,000 scripts without its index, a pinger beside them',
  'pings answered while the library is read and written (the index rebuilt, the bytes counted)',
  async () => {
    // A library people copied in by hand: no index.json, so the first save rebuilds it.
    const dir = fs.mkdtempSync(path.join(server.stateDir, 'library-'));
    for (let i = 0; i < 5000; i++) {
      fs.mkdirSync(path.join(dir, `lib-${i}`));
      fs.writeFileSync(path.join(dir, `lib-${i}`, 'script.py'), `print(${i})\n`);
      fs.writeFileSync(
        path.join(dir, `lib-${i}`, 'metadata.json'),
        JSON.stringify({ script_id: `script_${String(i).padStart(12, '0')}`, language: 'python', description: `library script ${i}`, tags: [], packages: [], run_count: 0 }),
      );
    }
    const other = await startCorpusServer({
      name: 'corpus-stores-library',
      args: ['--http-listen', 'off', '--pool', 'off'],
      env: { CELLGATE_SCRIPTS_DIR: dir, CELLGATE_MAX_SCRIPTS: '10000', CELLGATE_MAX_SCRIPTS_MB: '64' },
    });
    try {
      const calls = [];
      for (let i = 0; i < 10; i++)
        calls.push(() => other.call('save_script', { name: `lib-${i}`, language: 'python', code: `print("again", ${i})\n`, description: 'again' }));
      const { results, answeredWhileBusy } = await withPinger(other, calls);
      for (const r of results) assert.equal(sc(r).success, true, show(r, other));
      assert.ok(fs.existsSync(path.join(dir, 'index.json')), 'the index was rebuilt');
      assert.ok(answeredWhileBusy >= 1, `no ping was answered while the saves were out (${answeredWhileBusy})`);
      return `10 saved; ${answeredWhileBusy} pings answered meanwhile`;
    } finally {
      await other.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);

kase(
  `17 runs of ${CELL_CODE / 1048576} MB code cells in one session (notebook cap 64 MB)`,
  'notebook.jsonl never passes 64 MB; the cells past it are cut, then left out',
  async () => {
    const sid = 'sess_storesnotebook';
    let largest = 0;
    for (let i = 0; i < 17; i++) {
      const code = `x = ${i}  # ` + 'n'.repeat(CELL_CODE - 32) + '\n';
      const r = await callExec(server.client, { language: 'python', code, session_id: sid }, { timeoutMs: 120000 });
      assert.equal(sc(r).status, 'success', show(r, server));
      const files = findFiles(path.join(server.stateDir, 'instances'), 'notebook.jsonl');
      assert.equal(files.length, 1, files.join(','));
      largest = Math.max(largest, fs.statSync(files[0]).size);
      assert.ok(largest <= NOTEBOOK_MAX, `after run ${i + 1} notebook.jsonl is ${largest} bytes`);
    }
    return `notebook.jsonl at most ${largest} bytes (cap ${NOTEBOOK_MAX})`;
  },
);

kase(
  'export_notebook of the full record, a pinger beside it',
  `pings answered while it runs; the server's peak memory rises by less than ${EXPORT_HWM_MB} MB; a valid notebook that says runs were left out`,
  async () => {
    const sid = 'sess_storesnotebook';
    const memory = watchMemory(server, 50);
    const { results, answeredWhileBusy } = await withPinger(server, [
      () => server.call('export_notebook', { session_id: sid, filename: 'full.ipynb' }, 300000),
    ]);
    const seen = memory.stop();
    const r = results[0];
    assert.equal(sc(r).success, true, show(r, server));
    const rise = seen.hwmMb - seen.startRssMb;
    assert.ok(
      answeredWhileBusy >= 1 && rise < EXPORT_HWM_MB,
      `${answeredWhileBusy} pings answered during the export; peak rose by ${rise.toFixed(0)} MB (start ${seen.startRssMb.toFixed(0)}, VmHWM ${seen.hwmMb.toFixed(0)})`,
    );
    const record = findFiles(path.join(server.stateDir, 'instances'), 'notebook.jsonl')[0];
    const written = path.join(path.dirname(record), 'disk', 'workspace', 'full.ipynb');
    const notebook = JSON.parse(fs.readFileSync(written, 'utf8'));
    assert.equal(notebook.nbformat, 4);
    const last = notebook.cells.at(-1);
    assert.match(String(last.source), /notebook record reached its limit/);
    return `${sc(r).cells} code cells, ${(sc(r).size_bytes / 1048576).toFixed(0)} MB file; ${answeredWhileBusy} pings meanwhile; VmHWM ${seen.hwmMb.toFixed(0)} MB from ${seen.startRssMb.toFixed(0)} MB`;
  },
);

kase(
  '`cellgate mcp --keep-sessions` (and --gateway alone) as users type them',
  'the server starts and runs code',
  async () => {
    for (const args of [['--http-listen', 'off', '--keep-sessions'], ['--keep-sessions', '--gateway', '--http-listen', 'off']]) {
      const s = await startCorpusServer({ name: 'corpus-stores-flags', args });
      try {
        const r = await callExec(s.client, { language: 'bash', code: 'echo flag-ok' });
        assert.equal(sc(r).status, 'success', show(r, s));
        assert.match(sc(r).stdout, /flag-ok/);
      } finally {
        await s.close();
      }
    }
    return 'both started and ran echo';
  },
);
