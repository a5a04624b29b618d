// The soak's clients: a lane is one session driven by one front end for its cells; the gateway
// pair is a notebook client (WebSocket) and an MCP client on one kernel at once.

import { isBusy, sleep } from '../e2e/lib.mjs';
import { openChannels } from '../e2e/gateway_ws_raw.mjs';
import { LANGS, newToken, pickKind } from './work.mjs';

const { CallToolResultSchema } = await import('../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js');

export const FRONTS = ['stdio', 'http1', 'modern'];
const CALL_TIMEOUT_MS = 180000; // past this an unanswered call is lost
const NOTEBOOK_TIMEOUT_MS = 120000; // the same for a notebook's cell (its cells print and end at once)
const V = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';

/**
 * Counts the answers an SDK client got for no request it waits on: a second answer to one
 * call, or a late one to a call it cancelled (the SDK cannot tell them apart: a figure).
 */
export function watchAnswers(ctx, client) {
  const before = client.onerror;
  client.onerror = (err) => {
    if (/response for an unknown message ID/.test(err?.message ?? '')) ctx.ledger.strayAnswers++;
    before?.(err);
  };
  return client;
}

/** A 2026-07-28 request over HTTP (raw fetch). Resolves { messages: every JSON-RPC message with our id, status }. */
export async function modernPost(url, method, params, { tasks = false, signal } = {}) {
  const id = Math.floor(Math.random() * 1e12);
  const name = params.name ?? params.taskId;
  const meta = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientInfo': { name: 'soak', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS]: {} } } : {} };
  const res = await fetch(url, { method: 'POST', signal, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': V, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': String(name) } : {}) },
  body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }) });
  const text = await res.text();
  const all = res.headers.get('content-type')?.includes('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)))
    : text ? [JSON.parse(text)] : [];
  return { messages: all.filter((m) => m.id === id), status: res.status };
}

/** One answer of a modern call: the result, or throws with the JSON-RPC error; counts the answers. */
function oneAnswer(ctx, rec, r) {
  if (r.messages.length !== 1) ctx.ledger.fail('answers', `${rec.token}: ${r.messages.length} answers to one call (HTTP ${r.status})`);
  const m = r.messages[0];
  if (!m) throw new Error(`no answer (HTTP ${r.status})`);
  if (m.error) throw Object.assign(new Error(`JSON-RPC ${m.error.code}: ${m.error.message}`), { rpc: true });
  return m.result;
}

/** Runs ARGS as execute_code through FRONT; a task when TASK. Resolves the CallToolResult. */
async function callThrough(ctx, front, client, rec, args, { task, signal }) {
  if (front === 'modern') {
    const url = ctx.s2.url;
    if (!task) return oneAnswer(ctx, rec, await modernPost(url, 'tools/call', { name: 'execute_code', arguments: args }, { signal }));
    // A timeout past 60 s makes it a task; polled with tasks/get until it ends.
    const created = oneAnswer(ctx, rec, await modernPost(url, 'tools/call', { name: 'execute_code', arguments: { ...args, timeout: args.timeout ?? 61 } }, { tasks: true, signal }));
    if (created.resultType !== 'task') return created;
    for (;;) {
      const g = oneAnswer(ctx, rec, await modernPost(url, 'tasks/get', { taskId: created.taskId }, { tasks: true, signal }));
      if (g.status === 'completed' || g.status === 'failed') return g.result;
      if (g.status === 'cancelled') throw new Error('task cancelled');
      await sleep(Math.min(created.pollIntervalMs ?? 500, 1000));
    }
  }
  const params = { name: 'execute_code', arguments: args };
  if (!task) return client.callTool(params, undefined, { timeout: CALL_TIMEOUT_MS, signal });
  let result = null;
  let error = null;
  for await (const m of client.experimental.tasks.callToolStream(params, CallToolResultSchema, { task: { ttl: 30000 }, timeout: CALL_TIMEOUT_MS, signal })) {
    if (m.type === 'result') result = m.result;
    else if (m.type === 'error') error = m.error;
  }
  if (error) throw error;
  return result;
}

/**
 * Runs one cell (ARGS, expecting EXPECT) as a call in SESSION through FRONT, retrying while
 * the session is busy. Records it in the ledger. Resolves the last result or null.
 */
export async function runCall(ctx, { front, client, session, lang, kind, expect, args, token, task: asTask, cancelAfterMs }) {
  let task = asTask;
  const server = front === 'stdio' ? ctx.s1 : ctx.s2;
  for (let attempt = 0; attempt < 80; attempt++) {
    const rec = ctx.ledger.begin({ token, front, server: server.kind, session, lang, kind, expect, task });
    const abort = cancelAfterMs ? new AbortController() : null;
    const timer = abort ? setTimeout(() => abort.abort(), cancelAfterMs) : null;
    const epoch = server.epoch;
    try {
      const c = front === 'stdio' ? ctx.s1.client : client;
      const result = await callThrough(ctx, front, c, rec, { ...args, ...(session ? { session_id: session } : {}) }, { task, signal: abort?.signal });
      clearTimeout(timer);
      if (isBusy(result)) {
        ctx.ledger.answer(rec, result, { busy: true });
        await sleep(300);
        continue;
      }
      ctx.ledger.answer(rec, result);
      return result;
    } catch (err) {
      clearTimeout(timer);
      if (abort?.signal.aborted) ctx.ledger.noAnswer(rec, 'cancelled by the client', true);
      else if (err.rpc || err.code !== undefined && typeof err.code === 'number' && err.code > -33000 && err.code < -32000 && !/timed out/i.test(err.message)) {
        if (isBusy(err)) { ctx.ledger.answer(rec, null, { busy: true }); await sleep(300); continue; }
        // The tasks cap (--max-tasks-per-client: finished tasks are kept for their TTL) refuses
        // a task and says so; a plain call still runs.
        if (task && /max-tasks/.test(err.message)) { ctx.ledger.answer(rec, null, { refused: true }); task = false; continue; }
        ctx.ledger.answer(rec, null, { error: err.message });
      } else if (server.killing || server.epoch !== epoch || /closed/i.test(err.message) && server.killedAt) {
        ctx.ledger.noAnswer(rec, `the server was killed (${err.message})`, true);
      } else ctx.ledger.noAnswer(rec, err.message, false);
      return null;
    }
  }
  ctx.ledger.fail('busy', `${session}: still busy after 80 tries`);
  return null;
}

/** A session's lane: CELLS cells of seeded kinds in one language through one front end, then close_session. */
export async function runLane(ctx, phase, i, cells) {
  const front = FRONTS[i % 3];
  // Three front ends and four languages: every pair within 12 lanes, R in the short run's 6.
  const lang = LANGS[i % LANGS.length];
  const session = `soak-p${phase}-s${i}`;
  let client = null;
  if (front === 'http1') client = watchAnswers(ctx, (await ctx.s2.connect()).client);
  const tasky = front !== 'stdio';
  for (let c = 0; c < cells; c++) {
    if (ctx.phaseDeadline && Date.now() > ctx.phaseDeadline) break;
    if (front === 'stdio') await ctx.s1Ready;
    const token = newToken();
    const cell = ctx.cellFor(lang, phase === 0 ? 'print' : pickKind(ctx.rng), token);
    const task = tasky && cell.expect !== 'cancel' && ctx.rng.next() < 0.25;
    await runCall(ctx, { front, client, session, lang, token, task, ...cell });
    ctx.ledger.cellsDone++;
  }
  await closeSession(ctx, front, client, session);
  await client?.close().catch(() => {});
}

/** close_session through FRONT (retried while busy, and after a restart of the stdio server). */
export async function closeSession(ctx, front, client, session) {
  for (let i = 0; i < 80; i++) {
    if (front === 'stdio') await ctx.s1Ready;
    try {
      const params = { name: 'close_session', arguments: { session_id: session } };
      const r = front === 'modern'
        ? (await modernPost(ctx.s2.url, 'tools/call', params)).messages[0]?.result
        : await (front === 'stdio' ? ctx.s1.client : client).callTool(params, undefined, { timeout: CALL_TIMEOUT_MS });
      if (!isBusy(r)) return r;
    } catch (err) {
      if (!isBusy(err) && !/closed|killed/i.test(err.message)) return null;
    }
    await sleep(300);
  }
  return null;
}

/**
 * The gateway pair: an HTTP (2025-11-25) client makes a Python session; a notebook client
 * opens its kernel's channels and runs N cells while the MCP client runs N calls in the
 * same session. Each execute_request gets exactly one execute_reply, and what comes back
 * under its msg_id carries its token only.
 */
export async function runGatewayPair(ctx, phase, n) {
  const session = `soak-p${phase}-gw`;
  const client = watchAnswers(ctx, (await ctx.s2.connect()).client);
  const setup = () => runCall(ctx, { front: 'http1', client, session, lang: 'python', kind: 'setup', expect: 'any', token: newToken(), args: { language: 'python', code: 'gw = 0' } });
  let first = await setup();
  // The kill_kernel fault picks any kernel of the server, this one too while it starts
  // ("kernel exited during startup"): as a user would, the next call starts it again.
  if (!first?.structuredContent?.kernel_id && first?.structuredContent?.status === 'setup_error') first = await setup();
  const kernelId = first?.structuredContent?.kernel_id;
  if (!kernelId) {
    ctx.ledger.fail('gateway', `no kernel_id for ${session}: ${JSON.stringify(first?.structuredContent ?? null).slice(0, 500)}`);
    await closeSession(ctx, 'http1', client, session); // its sandbox is not left to the leak check
    return;
  }
  const notebook = (async () => {
    let ch = null;
    for (let k = 0; k < n; k++) {
      try {
        ch ??= await openChannels(ctx.s2.port, ctx.s2.token, kernelId);
      } catch (err) {
        ctx.ledger.fail('gateway', `channels of ${kernelId}: ${err.message}`);
        return;
      }
      const token = newToken();
      const rec = ctx.ledger.begin({ token, front: 'gateway', server: 'http', session, lang: 'python', kind: 'print', expect: 'success' });
      const msgId = ch.execute(`gw += 1\nprint('${token}')`);
      const closed = ch.closed.then(() => { throw new Error(`the connection closed (${ch.closeFrame ?? 'no close frame'})`); });
      try {
        await Promise.race([closed, ch.waitFor((m) => m.msg_type === 'execute_reply' && m.parent_header?.msg_id === msgId, NOTEBOOK_TIMEOUT_MS)]);
        await sleep(200); // the iopub messages that follow the reply
        const mine = ch.messages.filter((m) => m.parent_header?.msg_id === msgId);
        const replies = mine.filter((m) => m.msg_type === 'execute_reply').length;
        if (replies !== 1) ctx.ledger.fail('answers', `${token}: ${replies} execute_replies`);
        const reply = mine.find((m) => m.msg_type === 'execute_reply');
        ctx.ledger.answer(rec, { structuredContent: { status: reply.content.status === 'ok' ? 'success' : 'execution_error' }, iopub: mine });
      } catch (err) {
        // A close frame says why (the kernel died: 1011); then the next cell opens again.
        ctx.ledger.noAnswer(rec, `notebook: ${err.message}`, ch.closeFrame !== null);
        ch.end();
        ch = null; // the next cell on a new connection
      }
      closed.catch(() => {});
      ctx.ledger.cellsDone++;
    }
    ch?.sendClose(1000);
    ch?.end();
  })();
  for (let k = 0; k < n; k++) {
    const token = newToken();
    await runCall(ctx, { front: 'http1', client, session, lang: 'python', kind: 'print', expect: 'success', token, args: { language: 'python', code: `gw += 1\nprint('${token}')` } });
    ctx.ledger.cellsDone++;
  }
  await notebook;
  await closeSession(ctx, 'http1', client, session);
  await client.close().catch(() => {});
}
