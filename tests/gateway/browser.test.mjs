// The Jupyter gateway in a real browser (issue 15): cellgate's Kernel Gateway API behind a real
// Jupyter front end, driven by a real chromium.
//
// cellgate (MCP over HTTP, --gateway-token) is the gateway; the classic Jupyter Notebook
// 6.4.12 (Debian's python3-notebook) runs with --gateway-url pointing at it, so every kernel
// the notebook starts is a cellgate session, and its kernel WebSocket is proxied by the
// notebook to cellgate's /api/kernels/{id}/channels. JupyterLab is not packaged in Debian 12,
// so the classic Notebook is the front end tested here (jupyter_server 1.23.3's GatewayClient
// is the same client code, and the notebook's gateway/ package is its ancestor).
//
// playwright-core drives Debian's /usr/bin/chromium headless (no browser download); every
// request the page makes to a host other than 127.0.0.1 is refused. The notebook is opened
// with its token, `print(6*7)` is typed into the first cell and run with Shift+Enter, then an
// HTML display and a matplotlib PNG; the outputs must show. cellgate's GET /api/kernels must
// list the notebook's kernel with connections >= 1. The toolbar's interrupt and restart go
// through the notebook to cellgate's REST. An MCP agent's session kernel (kernel_id), chosen
// in a second page's Kernel > Change kernel menu (its attach-<kernel id> kernelspec), shares
// its state both ways, with session_busy for the agent while the
// page's cell runs (gateway-notebook-agent.png). A screenshot is saved to
// $CELLGATE_TEST_ARTIFACTS (default build/test-artifacts)/gateway-notebook.png, also on
// failure; a failure prints the WebSocket messages the page saw, the page's console, the
// notebook's log (--debug: every gateway request and message summary) and cellgate's stderr.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { isBusy, REPO_ROOT, startHttpServer } from '../e2e/lib.mjs';

const PYTHON = '/usr/bin/python3'; // not the pyenv shim first on PATH
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = process.env.CELLGATE_TEST_ARTIFACTS || path.join(REPO_ROOT, 'build', 'test-artifacts');
const SCREENSHOT = path.join(ARTIFACTS, 'gateway-notebook.png');
const LOGFILE = path.join(ARTIFACTS, 'gateway-notebook.log'); // the diagnostics, pass or fail
const NOTEBOOK_NAME = 'gateway.ipynb';
const AGENT_NOTEBOOK = 'agent.ipynb'; // opened on the MCP agent's kernel
const AGENT_SCREENSHOT = path.join(ARTIFACTS, 'gateway-notebook-agent.png');
const KERNEL_WAIT_MS = 120000;
const OUTPUT_WAIT_MS = 90000;

let skipReason = null;
if (!fs.existsSync(CHROMIUM)) skipReason = `${CHROMIUM} is not installed`;
else if (!fs.existsSync('/usr/lib/python3/dist-packages/notebook/gateway')) skipReason = 'python3-notebook (classic Notebook with its gateway client) is not installed';

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (err) {
  skipReason ??= `playwright-core is not installed in tests/gateway (npm ci there): ${err.message}`;
}

const gatewayToken = crypto.randomBytes(24).toString('hex');
const notebookToken = crypto.randomBytes(24).toString('hex');

let server; // startHttpServer's handle: cellgate, the gateway
let jupyter; // { proc, port, base, dirs, logText(), exited }
let browser;
let context;
let page;
const wsLog = []; // the page's kernel WebSocket messages, summarised
const consoleLog = [];
const refused = []; // requests to other hosts, refused
let screenshotTaken = false;
let failed = false;

// --- helpers -----------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A request to cellgate's gateway API with its token; returns { status, headers, text, json }. */
async function gw(method, urlPath, { body, headers = {} } = {}) {
  const res = await fetch(`${server.origin}${urlPath}`, {
    method,
    headers: { Authorization: `token ${gatewayToken}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: Object.fromEntries(res.headers), text, json };
}

/** A request to the notebook server with its token. */
async function nb(urlPath, { method = 'GET', body } = {}) {
  const res = await fetch(`${jupyter.base}${urlPath}`, {
    method,
    headers: { Authorization: `token ${notebookToken}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, json };
}

const tail = (text, n = 6000) => (text.length > n ? '...' + text.slice(-n) : text);

/** Everything that explains a failure: the page's WebSocket messages and console, both servers' logs. */
function diagnostics(all = false) {
  const n = all ? Infinity : 60;
  return [
    `--- page kernel WebSocket messages (last ${Math.min(n, wsLog.length)} of ${wsLog.length}) ---`,
    wsLog.slice(-n).join('\n'),
    `--- page console (last 40) ---`,
    consoleLog.slice(-40).join('\n'),
    refused.length ? `--- refused requests to other hosts ---\n${refused.join('\n')}` : '',
    `--- jupyter notebook log (tail) ---`,
    jupyter ? (all ? jupyter.logText() : tail(jupyter.logText(), 12000)) : '(not started)',
    `--- cellgate stderr (tail) ---`,
    server ? (all ? server.stderrText() : tail(server.stderrText(), 6000)) : '(not started)',
  ].join('\n');
}

/** Summarises one kernel WebSocket frame (legacy JSON text, or binary with buffers). */
function summarise(dir, payload) {
  if (typeof payload !== 'string') return `${dir} binary ${payload.length} bytes`;
  try {
    const m = JSON.parse(payload);
    const c = m.content ?? {};
    let what = '';
    if (m.msg_type === 'status') what = c.execution_state;
    else if (m.msg_type === 'stream') what = `${c.name}: ${JSON.stringify(c.text).slice(0, 120)}`;
    else if (m.msg_type === 'execute_request') what = JSON.stringify(c.code).slice(0, 120);
    else if (m.msg_type === 'execute_reply') what = `${c.status} ${c.ename ?? ''} ${c.evalue ?? ''}`;
    else if (m.msg_type === 'display_data' || m.msg_type === 'execute_result') what = Object.keys(c.data ?? {}).join(',');
    else if (m.msg_type === 'error') what = `${c.ename}: ${c.evalue}`;
    return `${dir} ${m.channel ?? '?'} ${m.msg_type ?? m.header?.msg_type} ${what} parent=${m.parent_header?.msg_id ?? '-'}`;
  } catch {
    return `${dir} text ${JSON.stringify(payload.slice(0, 200))}`;
  }
}

async function screenshot(p = page, file = SCREENSHOT) {
  if (!p) return;
  try {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await p.screenshot({ path: file, fullPage: true });
    if (file === SCREENSHOT) screenshotTaken = true;
  } catch (err) {
    process.stderr.write(`gateway_browser: screenshot failed: ${err.message}\n`);
  }
}

/** Runs fn; on failure takes the screenshot and adds the diagnostics to the error. */
async function explained(fn, { shot = true, shotPage, shotFile } = {}) {
  try {
    return await fn();
  } catch (err) {
    if (shotPage?.()) await screenshot(shotPage(), shotFile);
    else if (shot) {
      failed = true;
      await screenshot();
    }
    const more = `\n${diagnostics()}`;
    err.message += more;
    if (typeof err.stack === 'string') err.stack += more; // what the test reporter prints
    throw err;
  }
}

// A notebook with one empty code cell and the python3 kernelspec (the name cellgate's
// GET /api/kernelspecs lists as its default).
function notebookJson() {
  return {
    cells: [{ cell_type: 'code', execution_count: null, id: 'c0ffee00', metadata: {}, outputs: [], source: [] }],
    metadata: {
      kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
      language_info: { name: 'python' },
    },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

async function startJupyter() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-gw-browser-'));
  const dirs = {
    root,
    home: path.join(root, 'home'),
    config: path.join(root, 'config'),
    data: path.join(root, 'data'),
    runtime: path.join(root, 'runtime'),
    notebooks: path.join(root, 'notebooks'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(dirs.notebooks, NOTEBOOK_NAME), JSON.stringify(notebookJson(), null, 1));
  fs.writeFileSync(path.join(dirs.notebooks, AGENT_NOTEBOOK), JSON.stringify(notebookJson(), null, 1));
  const port = await freePort();
  const args = [
    '-m', 'notebook',
    '--no-browser',
    '--allow-root',
    '--debug',
    '--ip=127.0.0.1',
    `--port=${port}`,
    '--port-retries=0',
    `--NotebookApp.token=${notebookToken}`,
    `--notebook-dir=${dirs.notebooks}`,
    `--gateway-url=${server.origin}`,
    `--GatewayClient.auth_token=${gatewayToken}`,
    '--GatewayClient.request_timeout=120',
  ];
  const env = {
    ...process.env,
    HOME: dirs.home,
    JUPYTER_CONFIG_DIR: dirs.config,
    JUPYTER_DATA_DIR: dirs.data,
    JUPYTER_RUNTIME_DIR: dirs.runtime,
    IPYTHONDIR: path.join(dirs.home, '.ipython'),
    PYTHONDONTWRITEBYTECODE: '1',
    // Only the gateway: no local kernels, no proxies to anywhere.
    no_proxy: '*',
    NO_PROXY: '*',
  };
  for (const k of ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY', 'JUPYTER_GATEWAY_URL', 'JUPYTER_PATH']) delete env[k];
  const proc = spawn(PYTHON, args, { cwd: dirs.notebooks, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const add = (chunk) => {
    log += chunk.toString('utf8');
    if (log.length > 512 * 1024) log = log.slice(-256 * 1024);
  };
  proc.stdout.on('data', add);
  proc.stderr.on('data', add);
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  jupyter = { proc, port, base: `http://127.0.0.1:${port}`, dirs, logText: () => log, exited };
  const deadline = Date.now() + 60000;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`jupyter notebook exited before answering:\n${log}`);
    try {
      const r = await nb('/api/status');
      if (r.status === 200) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`jupyter notebook did not answer on ${jupyter.base} within 60 s:\n${log}`);
    await sleep(250);
  }
}

async function stopJupyter() {
  if (!jupyter) return;
  const { proc, exited, dirs } = jupyter;
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill('SIGTERM'); // the notebook stops and shuts its (gateway) kernels down
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
  }
  fs.rmSync(dirs.root, { recursive: true, force: true });
}

async function launchBrowser() {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // The notebook scrolls inside #site, not the page: a viewport tall enough for every cell.
  context = await browser.newContext({ viewport: { width: 1280, height: 1400 } });
  // Never contact any host but this machine.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || url.hostname === '127.0.0.1' || url.hostname === 'localhost') return route.continue();
    refused.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  page = await newPage('');
}

/** A page in the browser's context, its console and kernel WebSocket messages logged (tag first). */
async function newPage(tag) {
  const p = await context.newPage();
  p.on('console', (m) => consoleLog.push(`${tag}${m.type()}: ${m.text()}`.slice(0, 500)));
  p.on('pageerror', (e) => consoleLog.push(`${tag}pageerror: ${e.message}`.slice(0, 500)));
  p.on('websocket', (ws) => {
    wsLog.push(`${tag}open ${ws.url().replace(/token=[^&]+/, 'token=…')}`);
    ws.on('framesent', (f) => wsLog.push(tag + summarise('->', f.payload)));
    ws.on('framereceived', (f) => wsLog.push(tag + summarise('<-', f.payload)));
    ws.on('socketerror', (e) => wsLog.push(`${tag}socketerror ${e}`));
    ws.on('close', () => wsLog.push(`${tag}close ${ws.url().replace(/token=[^&]+/, 'token=…')}`));
  });
  return p;
}

// --- set-up and tear-down ----------------------------------------------------------------

before(async () => {
  if (skipReason) return;
  server = await startHttpServer({ args: ['--gateway-token', gatewayToken], env: { CELLGATE_POOL: '0' } });
  await startJupyter();
  await launchBrowser();
}, { timeout: 120000 });

after(async () => {
  if (page && !failed) await screenshot(); // the final page, every cell (a failure took its own)
  await browser?.close().catch(() => {});
  await stopJupyter().catch((err) => process.stderr.write(`gateway_browser: stopping jupyter: ${err.message}\n`));
  await server?.close();
  if (screenshotTaken) process.stderr.write(`gateway_browser: screenshot ${SCREENSHOT}\n`);
  if (server) {
    try {
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      fs.writeFileSync(LOGFILE, diagnostics(true) + '\n');
      process.stderr.write(`gateway_browser: log ${LOGFILE}\n`);
    } catch {}
  }
});

// --- the tests -----------------------------------------------------------------------------

const opts = { skip: skipReason ?? false };

test('cellgate prints the gateway line and answers the REST the notebook needs', opts, () =>
  explained(async () => {
    const line = server.stderrText().match(/gateway: jupyter notebook --gateway-url=(\S+) --GatewayClient\.auth_token=(\S+)/);
    assert.ok(line, `no "gateway: jupyter notebook --gateway-url=..." line on cellgate's stderr`);
    assert.equal(line[1].replace(/\/$/, ''), server.origin);
    assert.ok(!server.stderrText().includes(gatewayToken), 'the gateway token is in the log');

    const unauth = await fetch(`${server.origin}/api/kernelspecs`);
    assert.equal(unauth.status, 401, `GET /api/kernelspecs without the token: ${unauth.status} ${await unauth.text()}`);

    const api = await gw('GET', '/api');
    assert.equal(api.status, 200, `GET /api: ${api.status} ${api.text}`);
    assert.ok(api.json && typeof api.json.version === 'string', `GET /api: ${api.text}`);

    const specs = await gw('GET', '/api/kernelspecs');
    assert.equal(specs.status, 200, `GET /api/kernelspecs: ${specs.status} ${specs.text}`);
    assert.equal(specs.json?.default, 'python3', `GET /api/kernelspecs: ${specs.text}`);
    assert.ok(specs.json?.kernelspecs?.python3?.spec, `GET /api/kernelspecs has no python3 spec: ${specs.text}`);

    // The notebook sees cellgate's kernelspecs, not local ones.
    const nbSpecs = await nb('/api/kernelspecs');
    assert.equal(nbSpecs.status, 200, `notebook GET /api/kernelspecs: ${nbSpecs.status} ${nbSpecs.text}`);
    assert.deepEqual(Object.keys(nbSpecs.json.kernelspecs).sort(), Object.keys(specs.json.kernelspecs).sort(),
      `the notebook's kernelspecs are not cellgate's: ${nbSpecs.text}`);
  }, { shot: false }));

test('the notebook opens in chromium and its kernel, a cellgate session, goes idle', opts, () =>
  explained(async () => {
    await page.goto(`${jupyter.base}/notebooks/${NOTEBOOK_NAME}?token=${notebookToken}`, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.waitForFunction(() => window.Jupyter?.notebook?._fully_loaded === true, null, { timeout: 60000 });
    await page.waitForFunction(
      () => {
        const k = window.Jupyter?.notebook?.kernel;
        const icon = document.querySelector('#kernel_indicator_icon');
        return !!k && k.is_connected() && !!icon && icon.classList.contains('kernel_idle_icon');
      },
      null,
      { timeout: KERNEL_WAIT_MS, polling: 250 },
    );
    const kernelName = await page.evaluate(() => window.Jupyter.notebook.kernel.name);
    assert.equal(kernelName, 'python3');
  }));

test('print(6*7) typed into the first cell and run with Shift+Enter shows 42', opts, () =>
  explained(async () => {
    const editor = page.locator('#notebook-container .cell').first().locator('.CodeMirror');
    await editor.click();
    await page.keyboard.type('print(6*7)');
    const text = await page.evaluate(() => window.Jupyter.notebook.get_cell(0).get_text());
    assert.equal(text, 'print(6*7)', 'the first cell does not hold what was typed');
    await page.keyboard.press('Shift+Enter');
    const out = page.locator('#notebook-container .cell').first().locator('.output_area .output_subarea');
    await out.filter({ hasText: '42' }).first().waitFor({ timeout: OUTPUT_WAIT_MS });
    assert.equal((await out.first().innerText()).trim(), '42');
    // The prompt says it ran: In [1].
    await page.waitForFunction(() => /\[1\]/.test(document.querySelector('#notebook-container .cell .input_prompt')?.textContent ?? ''), null, { timeout: 30000 });
  }));

test('rich output: an HTML display and a matplotlib PNG show in the page', opts, () =>
  explained(async () => {
    // Shift+Enter selected a new cell below the first one; type into it.
    const html =
      "from IPython.display import HTML, display; display(HTML('<div id=\"cg-rich\" style=\"color:#fff;background:#363;padding:6px\">cellgate <b>gateway</b> rich 42</div>'))";
    await page.waitForFunction(() => window.Jupyter.notebook.get_selected_index() === 1, null, { timeout: 10000 });
    await page.keyboard.insertText(html); // no auto-closed brackets or quotes
    await page.keyboard.press('Shift+Enter');
    const rich = page.locator('#notebook-container .cell').nth(1).locator('.output_html #cg-rich');
    await rich.waitFor({ timeout: OUTPUT_WAIT_MS });
    assert.equal((await rich.innerText()).trim(), 'cellgate gateway rich 42');

    const plot = "import matplotlib.pyplot as plt; plt.figure(figsize=(4, 2.5)); plt.plot([1, 2, 3], [3, 1, 2]); plt.title('cellgate 42'); plt.show()";
    await page.waitForFunction(() => window.Jupyter.notebook.get_selected_index() === 2, null, { timeout: 10000 });
    await page.keyboard.insertText(plot);
    await page.keyboard.press('Shift+Enter');
    const img = page.locator('#notebook-container .cell').nth(2).locator('.output_png img');
    await img.waitFor({ timeout: OUTPUT_WAIT_MS });
    const { src, width, height } = await img.evaluate((el) => ({ src: el.getAttribute('src') ?? '', width: el.naturalWidth, height: el.naturalHeight }));
    assert.match(src, /^data:image\/png;base64,/);
    assert.ok(width > 100 && height > 50, `the PNG did not decode to a plot: ${width}x${height}`);
    await screenshot();
  }));

test("cellgate's GET /api/kernels lists the notebook's kernel with connections >= 1", opts, () =>
  explained(async () => {
    const sessions = await nb('/api/sessions');
    assert.equal(sessions.status, 200, `notebook GET /api/sessions: ${sessions.status} ${sessions.text}`);
    const mine = sessions.json.find((s) => s.path === NOTEBOOK_NAME || s.notebook?.path === NOTEBOOK_NAME);
    assert.ok(mine, `the notebook has no session for ${NOTEBOOK_NAME}: ${sessions.text}`);
    const id = mine.kernel.id;
    const browserId = await page.evaluate(() => window.Jupyter.notebook.kernel.id);
    assert.equal(browserId, id, 'the page and the notebook server disagree on the kernel id');

    const list = await gw('GET', '/api/kernels');
    assert.equal(list.status, 200, `GET /api/kernels: ${list.status} ${list.text}`);
    assert.ok(Array.isArray(list.json), `GET /api/kernels is not an array: ${list.text}`);
    const k = list.json.find((m) => m.id === id);
    assert.ok(k, `cellgate's GET /api/kernels does not list the notebook's kernel ${id}: ${list.text}`);
    assert.equal(k.name, 'python3', list.text);
    assert.ok(Number.isInteger(k.connections) && k.connections >= 1, `connections must be >= 1: ${list.text}`);
    assert.match(k.last_activity, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/, list.text);
    assert.ok(['idle', 'busy', 'starting'].includes(k.execution_state), list.text);

    const one = await gw('GET', `/api/kernels/${id}`);
    assert.equal(one.status, 200, `GET /api/kernels/${id}: ${one.status} ${one.text}`);
    assert.equal(one.json.id, id);
  }));

// The toolbar's kernel buttons go through the notebook's gateway client to cellgate's REST:
// POST /api/kernels/{id}/interrupt and POST /api/kernels/{id}/restart.
const busyIcon = () => document.querySelector('#kernel_indicator_icon')?.classList.contains('kernel_busy_icon');
const idleIcon = () => {
  const k = window.Jupyter?.notebook?.kernel;
  return !!k && k.is_connected() && !!document.querySelector('#kernel_indicator_icon')?.classList.contains('kernel_idle_icon');
};

test('the toolbar interrupts a running cell (KeyboardInterrupt shows), the kernel stays', opts, () =>
  explained(async () => {
    await page.waitForFunction(() => window.Jupyter.notebook.get_selected_index() === 3, null, { timeout: 10000 });
    await page.keyboard.insertText("import time; print('sleeping', flush=True); time.sleep(120)");
    await page.keyboard.press('Shift+Enter');
    const cell = page.locator('#notebook-container .cell').nth(3);
    await cell.locator('.output_area').filter({ hasText: 'sleeping' }).first().waitFor({ timeout: OUTPUT_WAIT_MS });
    await page.waitForFunction(busyIcon, null, { timeout: 10000 });
    await page.click('button[data-jupyter-action="jupyter-notebook:interrupt-kernel"]');
    await cell.locator('.output_area').filter({ hasText: 'KeyboardInterrupt' }).first().waitFor({ timeout: 30000 });
    await page.waitForFunction(idleIcon, null, { timeout: 30000, polling: 250 });
  }));

test('the toolbar restarts the kernel: same id in cellgate, its state gone', opts, () =>
  explained(async () => {
    const id = await page.evaluate(() => window.Jupyter.notebook.kernel.id);
    await page.click('button[data-jupyter-action="jupyter-notebook:confirm-restart-kernel"]');
    const confirm = page.locator('.modal-dialog .modal-footer button', { hasText: 'Restart' });
    await confirm.click({ timeout: 10000 });
    await page.locator('.modal-dialog').waitFor({ state: 'detached', timeout: 10000 });
    await page.waitForFunction(idleIcon, null, { timeout: KERNEL_WAIT_MS, polling: 250 });
    assert.equal(await page.evaluate(() => window.Jupyter.notebook.kernel.id), id, 'the restarted kernel has a new id');

    await page.waitForFunction(() => window.Jupyter.notebook.get_selected_index() === 4, null, { timeout: 10000 });
    await page.locator('#notebook-container .cell').nth(4).locator('.CodeMirror').click(); // the dialog took the focus
    await page.keyboard.insertText("print('plt' in globals(), 6*7)");
    await page.keyboard.press('Shift+Enter');
    const out = page.locator('#notebook-container .cell').nth(4).locator('.output_area .output_subarea');
    await out.filter({ hasText: '42' }).first().waitFor({ timeout: OUTPUT_WAIT_MS });
    assert.equal((await out.first().innerText()).trim(), 'False 42', 'the restart kept the kernel state');

    const list = await gw('GET', '/api/kernels');
    const k = list.json?.find?.((m) => m.id === id);
    assert.ok(k, `cellgate no longer lists kernel ${id} after the restart: ${list.status} ${list.text}`);
    assert.ok(k.connections >= 1, `connections must be >= 1 after the restart: ${list.text}`);
  }));

// Sharing (the contract's last part): an MCP agent's session kernel, listed by the gateway
// under the kernel_id its results carry, opened in the notebook: the page sees the agent's
// variable, the agent gets session_busy while the page's cell runs, then sees the page's.
let agentPage;
test("the MCP agent's kernel opened in the notebook: shared state both ways, session_busy while a cell runs", opts, () =>
  explained(async () => {
    const { client } = await server.connect();
    const call = async (name, args) => {
      const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
      return { r, s: r.structuredContent ?? {} };
    };
    const started = await call('start_session', { language: 'python' });
    assert.ok(started.s.session_id, `start_session: ${JSON.stringify(started.r).slice(0, 2000)}`);
    const sid = started.s.session_id;
    const set = await call('execute_code', { language: 'python', session_id: sid, code: 'agent_x = 41\nprint(agent_x)' });
    assert.equal(set.s.status, 'success', JSON.stringify(set.r).slice(0, 2000));
    const kernelId = set.s.kernel_id;
    assert.match(kernelId ?? '', /^[0-9a-f-]{36}$/, `execute_code has no kernel_id: ${JSON.stringify(set.s).slice(0, 2000)}`);
    if (started.s.kernel_id !== undefined) assert.equal(started.s.kernel_id, kernelId, 'start_session and execute_code disagree on kernel_id');
    const listed = await gw('GET', '/api/kernels');
    assert.ok(listed.json?.some?.((m) => m.id === kernelId), `GET /api/kernels does not list the agent's kernel ${kernelId}: ${listed.text}`);

    // Each running kernel has a kernelspec of its own, attach-<kernel id>: agent.ipynb is
    // opened (on a new kernel of its own, python3) and switched to the agent's kernel in
    // the menu, Kernel > Change kernel > "Agent's session ... (python, live)".
    const attach = `attach-${kernelId}`;
    const specs = await gw('GET', '/api/kernelspecs');
    assert.ok(specs.json?.kernelspecs?.[attach], `GET /api/kernelspecs has no ${attach}: ${specs.text}`);
    const display = specs.json.kernelspecs[attach].spec.display_name;
    assert.match(display, /^Agent's session .*\(python, live\)$/, specs.text);

    agentPage = await newPage('agent: ');
    await agentPage.goto(`${jupyter.base}/notebooks/${AGENT_NOTEBOOK}?token=${notebookToken}`, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await agentPage.waitForFunction(idleIcon, null, { timeout: KERNEL_WAIT_MS, polling: 250 });
    const own = await agentPage.evaluate(() => window.Jupyter.notebook.kernel.id);
    assert.notEqual(own, kernelId);
    await agentPage.locator('#menubar a.dropdown-toggle', { hasText: /^Kernel$/ }).click();
    await agentPage.locator('#menu-change-kernel').hover();
    const entry = agentPage.locator(`#kernel-submenu-${attach} > a`);
    assert.equal((await entry.innerText({ timeout: 10000 })).trim(), display);
    await entry.click();
    await agentPage.waitForFunction((id) => {
      const k = window.Jupyter.notebook.kernel;
      return k?.id === id && k.is_connected() && document.querySelector('#kernel_indicator_icon')?.classList.contains('kernel_idle_icon');
    }, kernelId, { timeout: KERNEL_WAIT_MS, polling: 250 });
    assert.equal((await agentPage.locator('#kernel_indicator .kernel_indicator_name').innerText()).trim(), display);
    const sessions = await nb('/api/sessions');
    assert.equal(sessions.json?.find?.((x) => x.path === AGENT_NOTEBOOK)?.kernel?.id, kernelId, `the notebook's session is not on the agent's kernel: ${sessions.text}`);

    await agentPage.locator('#notebook-container .cell').first().locator('.CodeMirror').click();
    await agentPage.keyboard.type('print(agent_x + 1)');
    await agentPage.keyboard.press('Shift+Enter');
    const out0 = agentPage.locator('#notebook-container .cell').nth(0).locator('.output_area .output_subarea');
    await out0.first().waitFor({ timeout: OUTPUT_WAIT_MS });
    assert.equal((await out0.first().innerText()).trim(), '42', "the page does not see the agent's variable");

    await agentPage.waitForFunction(() => window.Jupyter.notebook.get_selected_index() === 1, null, { timeout: 10000 });
    await agentPage.keyboard.insertText("import time; notebook_y = 'set in the notebook'; print('napping', flush=True); time.sleep(8); print('awake')");
    await agentPage.keyboard.press('Shift+Enter');
    const cell1 = agentPage.locator('#notebook-container .cell').nth(1);
    await cell1.locator('.output_area').filter({ hasText: 'napping' }).first().waitFor({ timeout: OUTPUT_WAIT_MS });
    const busy = await call('execute_code', { language: 'python', session_id: sid, code: 'print("agent during the cell")' });
    assert.ok(isBusy(busy.r) && busy.s.error === 'session_busy',
      `the agent's call while the page's cell runs must get session_busy: ${JSON.stringify(busy.r).slice(0, 2000)}`);
    await cell1.locator('.output_area').filter({ hasText: 'awake' }).first().waitFor({ timeout: 30000 });
    await agentPage.waitForFunction(idleIcon, null, { timeout: 30000, polling: 250 });

    let seen;
    for (let i = 0; i < 20; i++) { // the page's execute_reply may reach the page before the session is free
      seen = await call('execute_code', { language: 'python', session_id: sid, code: 'print(notebook_y)' });
      if (!isBusy(seen.r)) break;
      await sleep(250);
    }
    assert.equal(seen.s.status, 'success', JSON.stringify(seen.r).slice(0, 2000));
    assert.equal(seen.s.stdout, 'set in the notebook\n', "the agent does not see the page's variable");

    const k = (await gw('GET', '/api/kernels')).json.find((m) => m.id === kernelId);
    assert.ok(k && k.connections >= 1, `the agent's kernel must list connections >= 1 while the page is open: ${JSON.stringify(k)}`);
    // An MCP client's kernel is not the front end's to delete: DELETE detaches (204), the kernel lives on.
    const del = await gw('DELETE', `/api/kernels/${kernelId}`);
    assert.equal(del.status, 204, `DELETE of the agent's kernel: ${del.status} ${del.text}`);
    assert.equal((await gw('GET', `/api/kernels/${kernelId}`)).status, 200, 'the agent kernel lives on after DELETE');
    await screenshot(agentPage, AGENT_SCREENSHOT);
  }, { shotPage: () => agentPage, shotFile: AGENT_SCREENSHOT }));

// A session made without a kernel name: the notebook's GatewayKernelManager then sends
// POST /api/kernels {"name": null, "env": {...}}, which Jupyter Server and the Kernel Gateway
// answer with the default kernel (MainKernelHandler: setdefault leaves the null,
// MultiKernelManager.start_kernel(kernel_name=None) takes the default).
test('a notebook session with no kernel name gets the default kernel ({"name": null})', opts, () =>
  explained(async () => {
    const made = await nb('/api/sessions', { method: 'POST', body: { path: 'unnamed.ipynb', type: 'notebook', name: '', kernel: {} } });
    assert.equal(made.status, 201, `notebook POST /api/sessions with kernel {}: ${made.status} ${made.text}`);
    const id = made.json.kernel.id;
    const one = await gw('GET', `/api/kernels/${id}`);
    assert.equal(one.status, 200, `GET /api/kernels/${id}: ${one.status} ${one.text}`);
    assert.equal(one.json.name, 'python3', one.text);
    const gone = await nb(`/api/sessions/${made.json.id}`, { method: 'DELETE' });
    assert.equal(gone.status, 204, `notebook DELETE /api/sessions/${made.json.id}: ${gone.status} ${gone.text}`);
    assert.equal((await gw('GET', `/api/kernels/${id}`)).status, 404, 'the kernel outlived its notebook session');
  }, { shot: false }));
