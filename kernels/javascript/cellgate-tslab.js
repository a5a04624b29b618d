#!/usr/bin/env node
/*
 * cellgate's launcher for tslab's JavaScript kernel.
 *
 *   node cellgate-tslab.js kernel --config-path CONNECTION_FILE [--js|--ts]
 *   node cellgate-tslab.js --make-code-cache    (set-up: V8's code cache of TypeScript)
 *
 * It runs tslab's own executor, TypeScript converter and ZeroMQ server
 * (node_modules/tslab beside this file) and fixes what tslab 1.0.22 leaves
 * out of the Jupyter protocol:
 *
 *   - an exception or a compile error gives an `error` message on iopub and an
 *     execute_reply with ename, evalue and traceback (tslab only prints it to
 *     stderr and replies {status: "error"});
 *   - the value of a cell's last expression is an execute_result with
 *     text/plain, and application/json when it is plain data and the
 *     request an MCP tool's (tslab console.logs it to stdout);
 *   - kernel_info_reply has status "ok" and the Node.js version;
 *   - an aborted request's reply has status "aborted" (tslab: "abort"), and a
 *     failed cell aborts the requests already queued behind it but not those
 *     that arrive afterwards (tslab aborts everything for 200 ms);
 *   - history_request, comm_info_request and interrupt_request are answered
 *     (tslab answers no history or interrupt request and answers
 *     comm_info_request with a message typed complete_reply);
 *   - the process exits after shutdown_request (tslab's keeps running);
 *   - an empty key in the connection file means unsigned messages;
 *   - a socket's sends wait their turn (tslab's did not: zeromq.js threw EBUSY
 *     past 512 sends at once, and a cell printing ~500 lines never finished),
 *     stream text goes out once per turn of the event loop, and a receive
 *     error is logged instead of ending that socket's loop for good.
 *
 * Agent behaviour applies only to the execute requests cellgate's server sends
 * for MCP tool calls (their metadata carries "cellgate_agent": true; the gateway
 * removes it from what a Jupyter front end sends): the value's application/json
 * and the call's stdin (CELLGATE_STDIN_FILE). A front end's cell gets text/plain
 * alone and an empty stdin, never what an agent's call left in the file.
 *
 * In JavaScript mode (the default here; --ts for TypeScript) only syntax
 * errors stop a cell before it runs: tslab type-checks JavaScript too
 * (checkJs), so valid JavaScript such as `let x = 1; x = "a"` would be
 * rejected.  Type errors are dropped; the JavaScript engine reports real
 * errors (ReferenceError, TypeError...) when the code runs.
 *
 * In JavaScript mode cells are converted by a TypeScript program without
 * types (no lib, no @types/node: parsing those took 1-1.5 s of every start);
 * the typed program is made at the first completion or inspection.
 *
 * Interrupts: SIGINT stops synchronous code running in the cell itself
 * (vm breakOnSigint) and a pending top-level await. It cannot stop a
 * synchronous loop that runs after an await, or in a timer or callback:
 * only killing the process does. interrupt_request only works while the
 * kernel's event loop is free (a pending await), so interrupt_mode is
 * "signal".
 *
 * Nothing is written to disk.
 */
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const util = require("util");

// A kernel a Jupyter front end started through the gateway may name its working
// directory (KERNEL_WORKING_DIR): a path relative to the workspace is used when it
// exists; an absolute one is the front end's own path, meaningless here.
(function workingDir() {
  const wanted = process.env.KERNEL_WORKING_DIR || "";
  const target = path.join("/mnt/data", wanted);
  if (wanted && !wanted.startsWith("/") && !wanted.includes("..")) {
    try {
      if (fs.statSync(target).isDirectory()) process.chdir(target);
    } catch (e) {}
  }
})();

const dist = path.join(__dirname, "node_modules", "tslab", "dist");
const tsPath = require.resolve("@tslab/typescript-for-tslab", { paths: [dist] });

// V8's code cache of typescript.js (8 MB, ~0.3 s to compile at each start, ~0.1 s
// with the cache), written by the trusted set-up steps beside node_modules' other
// files, which sandboxes see read-only: one per V8 version, as the host's Node.js and
// the sandbox image's differ (scripts/setup.sh runs `node cellgate-tslab.js
// --make-code-cache` with the host's after npm ci, scripts/build-image.sh with the
// image's). V8 checks that a cache matches the source and its own version and flags,
// and compiles as usual where it does not (or where there is no cache).
const CODE_CACHE = path.join(
  __dirname,
  "node_modules",
  `.cellgate-typescript-v8-${process.versions.v8}.v8cache`
);
const makeCodeCache = process.argv[2] === "--make-code-cache";
const tsScript = (function loadTypeScript() {
  const vm = require("vm");
  const Module = require("module");
  let cachedData;
  if (!makeCodeCache) {
    try {
      cachedData = fs.readFileSync(CODE_CACHE);
    } catch (e) {
      return null; // no cache: require() compiles it
    }
  }
  const script = new vm.Script(Module.wrap(fs.readFileSync(tsPath, "utf8")), {
    filename: tsPath,
    cachedData,
  });
  const m = new Module(tsPath, module);
  m.filename = tsPath;
  m.paths = Module._nodeModulePaths(path.dirname(tsPath));
  script.runInThisContext().call(m.exports, m.exports, Module.createRequire(tsPath), m, tsPath, path.dirname(tsPath));
  m.loaded = true;
  require.cache[tsPath] = m;
  if (script.cachedDataRejected) {
    process.stderr.write(
      `cellgate-tslab: ${CODE_CACHE} does not match this Node.js or TypeScript: ` +
        "run `node cellgate-tslab.js --make-code-cache` again\n"
    );
  }
  return script;
})();
const ts = require(tsPath);

function parseArgs(argv) {
  const args = { configPath: "", jsKernel: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "kernel") continue;
    if (a === "--config-path" || a === "-f") args.configPath = argv[++i];
    else if (a.startsWith("--config-path=")) args.configPath = a.slice(14);
    else if (a === "--js") args.jsKernel = true;
    else if (a === "--ts") args.jsKernel = false;
    else if (!args.configPath && !a.startsWith("-")) args.configPath = a;
    else {
      process.stderr.write(`cellgate-tslab: unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  if (!args.configPath) {
    process.stderr.write(
      "usage: cellgate-tslab.js kernel --config-path CONNECTION_FILE [--js|--ts]\n"
    );
    process.exit(2);
  }
  return args;
}

const { configPath, jsKernel } = makeCodeCache
  ? { configPath: "", jsKernel: true }
  : parseArgs(process.argv.slice(2));

// tslab's converter drives TypeScript's watch program with a timer slot of its
// own that holds one timer and throws "Unexpected pending rebuildTimer" when
// TypeScript asks for a second. TypeScript asks for two kinds: the program's
// update, and the re-resolution of imports that failed when a watched folder
// changes (a module installed into node_modules after an import of it failed).
// The second one, left pending between cells, made every later cell fail with
// that error. serialTimers gives TypeScript any number of timers on tslab's one
// slot: they run in order when tslab runs its timer.
function serialTimers(system) {
  const slotSet = system.setTimeout;
  const slotClear = system.clearTimeout;
  let queue = null; // timers waiting for tslab's slot
  let slot = null; // tslab's timer, which runs the queue
  let running = null; // the queue being run (timers set meanwhile join it)
  function runQueue() {
    running = queue;
    queue = null;
    slot = null;
    try {
      while (running.length) running.shift().run();
    } finally {
      running = null;
    }
  }
  system.setTimeout = (callback, ms, ...args) => {
    const timer = { run: () => callback(...args) };
    if (running) {
      running.push(timer);
    } else {
      if (!queue) {
        queue = [];
        slot = slotSet(runQueue);
      }
      queue.push(timer);
    }
    return timer;
  };
  system.clearTimeout = (timer) => {
    for (const list of [queue, running]) {
      const i = list ? list.indexOf(timer) : -1;
      if (i >= 0) list.splice(i, 1);
    }
    if (queue && queue.length === 0) {
      slotClear(slot);
      queue = null;
      slot = null;
    }
  };
  return system;
}

// TypeScript's exports are read-only, so the converter is handed a copy of them
// with the functions cellgate changes.
//
// In JavaScript mode the program that converts cells (createConverter while
// `untyped` is set) has no types: no lib and no @types/node, which TypeScript
// parses and binds for 1-1.5 s before the kernel could answer, and whose types
// JavaScript mode drops anyway (below). The JavaScript it emits is the same;
// cellgate-any-module.d.ts declares every module, as `any`, so that a binding a
// cell requires (`const { readFileSync } = require("fs")`) is kept in the
// declarations later cells compile against, as with @types/node. Completion and
// inspection, which need the types, get tslab's own typed program, made at the
// first complete_request or inspect_request (ConverterSet).
const ANY_MODULE = path.join(__dirname, "cellgate-any-module.d.ts");
let untyped = false;
const replaced = {
  createWatchCompilerHost(rootFiles, options, system, ...rest) {
    if (untyped) {
      rootFiles = [...rootFiles, ANY_MODULE];
      options = { ...options, noLib: true, types: [] };
      delete options.lib;
    }
    return ts.createWatchCompilerHost(rootFiles, options, serialTimers(system), ...rest);
  },
};
if (jsKernel) {
  // tslab's converter gets its diagnostics from TypeScript's
  // getPreEmitDiagnostics[OfFiles]; its copy of them keeps syntax errors
  // (TS1xxx, including 1308 from which tslab learns of a top-level await) and
  // drops type and declaration-emit errors.
  const syntaxOnly = (f) =>
    function (...args) {
      return f.apply(this, args).filter((d) => d.code < 2000);
    };
  replaced.getPreEmitDiagnostics = syntaxOnly(ts.getPreEmitDiagnostics);
  replaced.getPreEmitDiagnosticsOfFiles = syntaxOnly(ts.getPreEmitDiagnosticsOfFiles);
}
{
  const shim = {};
  for (const k of Object.getOwnPropertyNames(ts)) {
    const get = k in replaced ? () => replaced[k] : () => ts[k];
    Object.defineProperty(shim, k, { enumerable: true, get });
  }
  require.cache[tsPath].exports = shim;
}

const { createConverter } = require(path.join(dist, "converter"));
const { createExecutor } = require(path.join(dist, "executor"));
const jupyter = require(path.join(dist, "jupyter"));
const { TaskCanceledError } = require(path.join(dist, "util"));
const tslabVersion = require(path.join(dist, "..", "package.json")).version;

/* ---- what one execution produced, filled through the executor's console - */

/** The outcome of the execution that is running (executions are serial). */
let current = null;

// A result that is plain data (numbers, strings, booleans, null, arrays and plain
// objects of those) is also given as application/json to an MCP tool's request, so
// agents get the value itself; anything else (functions, class instances, cycles,
// NaN...) or more than 1 MiB of JSON is left as text only.
const JSON_RESULT_MAX = 1024 * 1024;
function plainJson(value) {
  const plain = (v, depth) => {
    if (depth > 64) return false;
    if (v === null || typeof v === "string" || typeof v === "boolean") return true;
    if (typeof v === "number") return Number.isFinite(v);
    if (Array.isArray(v)) return v.every((x) => plain(x, depth + 1));
    if (typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype)
      return Object.values(v).every((x) => plain(x, depth + 1));
    return false;
  };
  try {
    if (!plain(value, 0)) return undefined;
    const text = JSON.stringify(value);
    if (text === undefined || text.length > JSON_RESULT_MAX) return undefined;
    return JSON.parse(text);
  } catch (e) {
    return undefined;
  }
}

// Set (true) on an execute request's content when the request came from an MCP
// tool; a Symbol, so nothing a message carries can set it.
const FROM_AGENT = Symbol("cellgate agent");
const fromAgent = (msg) =>
  !!msg.metadata && typeof msg.metadata === "object" && msg.metadata.cellgate_agent === true;

function newOutcome() {
  return { hasResult: false, result: undefined, error: null, diagnostics: [] };
}

function errorInfo(e) {
  if (e instanceof Error || (e && typeof e.stack === "string")) {
    const ename = e.name || (e.constructor && e.constructor.name) || "Error";
    const evalue = e.message === undefined ? String(e) : String(e.message);
    let stack = typeof e.stack === "string" ? e.stack.split("\n") : [];
    // Node.js puts the failing line of the code tslab compiled the cell to above the
    // message ("evalmachine.<anonymous>:5", "exports.tsLastExpr = o.x;", "^", ""):
    // not the cell's own code, so it goes.
    if (/^evalmachine\.<anonymous>:\d+$/.test(stack[0] || "")) {
      const blank = stack.indexOf("");
      if (blank > 0) stack = stack.slice(blank + 1);
    }
    // Drop the frames of the vm, tslab and Node.js internals below the cell.
    stack = stack.filter(
      (l) =>
        !/^\s+at /.test(l) ||
        !(/\bnode:/.test(l) || l.includes(dist) || l.includes(__filename))
    );
    if (stack.length === 0) stack = [`${ename}: ${evalue}`];
    return { ename, evalue, traceback: stack };
  }
  // `throw 42`, `throw "x"`, `throw {a: 1}`...
  const evalue = util.inspect(e);
  return { ename: "Uncaught", evalue, traceback: [`Uncaught ${evalue}`] };
}

/** The `console` the executor reports through. */
const executorConsole = {
  // Only called with the value of the cell's last expression.
  log(value) {
    if (current) {
      current.hasResult = true;
      current.result = value;
    } else {
      console.log(value);
    }
  },
  // Called with a thrown value, or ("%s%d:%d - %s", file, line, col, message)
  // for a compile error.
  error(first, ...rest) {
    if (!current) {
      console.error(first, ...rest);
    } else if (typeof first === "string" && first.startsWith("%s%d:%d - ")) {
      current.diagnostics.push(util.format(first, ...rest));
    } else {
      current.error = errorInfo(first);
    }
  },
};

/* ---- executor and handler ---------------------------------------------- */

/**
 * tslab keeps a cell's top-level bindings in `exports` and tells later cells
 * about them through a declaration file, but it drops `const x = require(..)`
 * from that file after one more cell, so a later cell's `x` compiles to a
 * bare `x` and throws a ReferenceError. Every binding is also reachable as a
 * global (unless a real global has that name) that reads and writes it.
 */
const mirrored = new Set();
function mirrorLocals(locals) {
  for (const name of Object.keys(locals)) {
    if (mirrored.has(name) || name.startsWith("tsLastExpr")) continue;
    if (Object.prototype.hasOwnProperty.call(globalThis, name)) continue;
    Object.defineProperty(globalThis, name, {
      configurable: true,
      enumerable: false,
      get: () => locals[name],
      set: (v) => {
        locals[name] = v;
      },
    });
    mirrored.add(name);
  }
}

class ConverterSet {
  constructor(jsKernel) {
    this.jsKernel = jsKernel;
  }
  get node() {
    if (!this._node) this._node = this.create(false);
    return this._node;
  }
  get browser() {
    if (!this._browser) this._browser = this.create(true);
    return this._browser;
  }
  // TypeScript mode: tslab's converter. JavaScript mode: cells are converted
  // by an untyped program, completed and inspected by the typed one, made on
  // first use and given the modules cells added (%module) until then.
  create(isBrowser) {
    const options = { isJS: this.jsKernel, isBrowser };
    if (!this.jsKernel) return createConverter(options);
    untyped = true;
    let plain;
    try {
      plain = createConverter(options);
    } finally {
      untyped = false;
    }
    let typedConv = null;
    const modules = new Map(); // module name -> addModule's arguments
    const typed = () => {
      if (!typedConv) {
        typedConv = createConverter(options);
        for (const args of modules.values()) typedConv.addModule(...args);
      }
      return typedConv;
    };
    return {
      convert: (...args) => plain.convert(...args),
      addModule: (...args) => {
        modules.set(args[0], args);
        if (typedConv) typedConv.addModule(...args);
        return plain.addModule(...args);
      },
      complete: (...args) => typed().complete(...args),
      inspect: (...args) => typed().inspect(...args),
      close: () => {
        plain.close();
        if (typedConv) typedConv.close();
      },
    };
  }
  close() {
    if (this._node) this._node.close();
    if (this._browser) this._browser.close();
  }
}

// A cell's standard input. Node kernels have no input_request, so cellgate writes
// the call's stdin to the file named by CELLGATE_STDIN_FILE before each cell (and
// empties it when the call has none). Reading fd 0 or /dev/stdin with
// fs.readFileSync, or process.stdin (readline, 'data'/'end' events), gives that
// text and then end-of-file.
const stdinFile = process.env.CELLGATE_STDIN_FILE || "";
const { Readable } = require("stream");
const realReadFileSync = fs.readFileSync;
let cellStdin = Buffer.alloc(0);
let cellStdinStream = null;

function loadCellStdin(agent) {
  cellStdin = Buffer.alloc(0);
  cellStdinStream = null;
  if (!stdinFile || !agent) return;
  try {
    cellStdin = realReadFileSync(stdinFile);
  } catch (e) {
    // No file yet: no input.
  }
}

fs.readFileSync = function readFileSync(file, options) {
  if (file === 0 || file === "/dev/stdin" || file === "/proc/self/fd/0") {
    const encoding = typeof options === "string" ? options : options && options.encoding;
    return encoding ? cellStdin.toString(encoding) : Buffer.from(cellStdin);
  }
  return realReadFileSync.apply(this, arguments);
};

Object.defineProperty(process, "stdin", {
  configurable: true,
  enumerable: true,
  get() {
    if (!cellStdinStream) {
      const data = cellStdin;
      let sent = false;
      cellStdinStream = new Readable({
        read() {
          if (sent) return;
          sent = true;
          if (data.length) this.push(data);
          this.push(null);
        },
      });
    }
    return cellStdinStream;
  },
});

class Handler extends jupyter.JupyterHandlerImpl {
  handleKernel() {
    const reply = super.handleKernel();
    reply.status = "ok";
    reply.implementation = jsKernel ? "jslab" : "tslab";
    reply.implementation_version = tslabVersion;
    reply.language_info.version = jsKernel
      ? process.versions.node
      : ts.version;
    reply.banner = `${jsKernel ? "JavaScript" : "TypeScript"} (tslab ${tslabVersion}, Node.js ${process.version})`;
    reply.help_links = [];
    return reply;
  }

  async handleExecuteImpl(req, writeStream, writeDisplayData) {
    current = req.cellgate = newOutcome();
    loadCellStdin(req[FROM_AGENT] === true);
    try {
      return await super.handleExecuteImpl(req, writeStream, writeDisplayData);
    } finally {
      current = null;
      mirrorLocals(this.executor.locals);
    }
  }

  async handleExecute(req, writeStream, writeDisplayData) {
    let status = "ok";
    let count = null;
    // With stop_on_error false a failure does not reject the queue's chain,
    // so the requests queued behind it still run.
    const keepGoing = req.stop_on_error === false;
    try {
      const r = await this.execQueue.add(async () => {
        try {
          return { count: await this.handleExecuteImpl(req, writeStream, writeDisplayData) };
        } catch (e) {
          if (keepGoing) return { failed: true, error: e };
          throw e;
        }
      });
      if (r.failed) throw r.error;
      count = r.count;
    } catch (e) {
      if (e instanceof TaskCanceledError) {
        status = "aborted";
      } else {
        status = "error";
        if (e && typeof e.count === "number") {
          count = e; // tslab's ExecutionCount, thrown on failure
        } else if (req.cellgate && !req.cellgate.error) {
          req.cellgate.error = errorInfo(e);
        }
        if (!keepGoing) {
          // Abort what is queued behind this cell, then take new requests.
          setImmediate(() => this.execQueue.reset());
        }
      }
    }
    return {
      status,
      execution_count: count ? count.count : null,
    };
  }
}

/* ---- wire protocol ------------------------------------------------------ */

const DELIM = Buffer.from("<IDS|MSG>");
const STREAM_CHUNK = 1 << 20;

class Message {
  static fromRaw(key, raw) {
    const m = new Message();
    const i = raw.findIndex((b) => b.equals(DELIM));
    if (i < 0) throw new Error("message missing delimiter");
    m.identity = raw.slice(0, i);
    const hmac = raw[i + 1].toString();
    const parts = raw.slice(i + 2);
    if (key) {
      const h = crypto.createHmac("sha256", key);
      for (const p of parts.slice(0, 4)) h.update(p);
      const want = h.digest("hex");
      if (
        hmac.length !== want.length ||
        !crypto.timingSafeEqual(Buffer.from(hmac), Buffer.from(want))
      ) {
        throw new Error("invalid message signature");
      }
    }
    m.header = JSON.parse(parts[0].toString());
    m.parent = JSON.parse(parts[1].toString());
    m.metadata = JSON.parse(parts[2].toString());
    m.content = JSON.parse(parts[3].toString());
    m.extra = parts.slice(4);
    return m;
  }

  createReply(msgType) {
    const r = new Message();
    r.identity = this.identity;
    r.header = {
      version: "5.3",
      date: new Date().toISOString(),
      session: this.header.session,
      username: this.header.username,
      msg_type: msgType || this.header.msg_type,
      msg_id: crypto.randomBytes(16).toString("hex"),
    };
    r.parent = this.header;
    r.metadata = {};
    r.content = {};
    r.extra = [];
    return r;
  }

  signAndSend(key, sock) {
    const bodies = [this.header, this.parent, this.metadata, this.content].map(
      (o) => JSON.stringify(o)
    );
    let sig = "";
    if (key) {
      const h = crypto.createHmac("sha256", key);
      for (const b of bodies) h.update(b);
      sig = h.digest("hex");
    }
    outboxOf(sock).send([...this.identity, DELIM, sig, ...bodies, ...this.extra]);
  }
}

/* ---- sockets ------------------------------------------------------------ */

// zeromq.js 6 allows one send in progress a socket, and after 512 sends that
// completed at once it delays the next one to let the event loop run: a send
// made meanwhile throws EBUSY. tslab sent without waiting, so a cell printing
// more than about 500 lines lost its output from there and never finished.
// Each socket's messages go through an Outbox: straight to the socket while
// nothing waits, else queued and sent in order once the socket is free.
const outboxes = new WeakMap();

function outboxOf(sock) {
  return outboxes.get(sock);
}

class Outbox {
  constructor(sock, name) {
    this.sock = sock;
    this.name = name;
    this.queue = [];
    this.last = null; // the promise of the latest send
    this.pumping = false;
    outboxes.set(sock, this);
  }

  send(frames) {
    if (this.queue.length === 0 && this.trySend(frames)) return;
    this.queue.push(frames);
    if (!this.pumping) this.pump();
  }

  // Hands FRAMES to the socket: false while it is still writing (EBUSY).
  trySend(frames) {
    try {
      this.last = this.sock.send(frames);
      this.last.catch((e) => this.failed(e));
    } catch (e) {
      if (e.code === "EBUSY") return false;
      this.failed(e);
    }
    return true;
  }

  async pump() {
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.sock.closed) {
        if (this.trySend(this.queue[0])) {
          this.queue.shift();
          continue;
        }
        const busy = this.last;
        await Promise.resolve(busy).then(
          () => {},
          () => {}
        );
        // Still busy after its send settled: give the event loop a turn.
        if (busy === this.last) await new Promise((done) => setImmediate(done));
      }
    } finally {
      this.pumping = false;
    }
  }

  failed(e) {
    if (!this.sock.closed) {
      process.stderr.write(`cellgate-tslab: ${this.name} send: ${e.message}\n`);
    }
  }
}

// Receives from SOCK until it is closed, handing each message to HANDLE. tslab's
// loops ended at the first error a receive reported, and the kernel went deaf.
async function serve(sock, name, handle) {
  while (!sock.closed) {
    let frames;
    try {
      frames = await sock.receive();
    } catch (e) {
      if (sock.closed) return;
      process.stderr.write(`cellgate-tslab: ${name} receive: ${e.message}\n`);
      await new Promise((done) => setTimeout(done, 10));
      continue;
    }
    try {
      await handle(frames);
    } catch (e) {
      process.stderr.write(`cellgate-tslab: ${name}: ${e && e.stack}\n`);
    }
  }
}

class Server extends jupyter.ZmqServer {
  constructor(handler, configPath, executor) {
    super(handler, configPath);
    this.executor = executor;
    this.held = null; // stream text not sent yet: { parent, name, text }
  }

  // tslab's init, with cellgate's receive loops and outboxes.
  async init() {
    this.connInfo = JSON.parse(fs.readFileSync(this.configPath, "utf-8"));
    const zmq = require(require.resolve("zeromq", { paths: [dist] }));
    this.iopub = new zmq.Publisher();
    this.shell = new zmq.Router();
    this.control = new zmq.Router();
    this.stdin = new zmq.Router();
    this.hb = new zmq.Reply();
    const channels = { iopub: this.iopub, shell: this.shell, control: this.control, stdin: this.stdin, hb: this.hb };
    for (const [name, sock] of Object.entries(channels)) new Outbox(sock, name);
    // Shell and control messages are not awaited: a completion request is
    // answered while a cell runs (tslab's queue orders the executions).
    const dispatch = (sock) => (frames) => {
      this.handleShellMessage(sock, ...frames);
    };
    serve(this.shell, "shell", dispatch(this.shell));
    serve(this.control, "control", dispatch(this.control));
    // A REP socket takes its next request only after it has replied.
    serve(this.hb, "hb", (frames) => this.hb.send(frames));
    const conn = this.connInfo;
    await Promise.all(
      Object.entries(channels).map(([name, sock]) =>
        sock.bind(`${conn.transport}://${conn.ip}:${conn[name + "_port"]}`)
      )
    );
  }

  async handleShellMessage(sock, ...raw) {
    let msg;
    try {
      msg = Message.fromRaw(this.connInfo.key, raw);
    } catch (e) {
      process.stderr.write(`cellgate-tslab: dropped a message: ${e.message}\n`);
      return;
    }
    const type = msg.header.msg_type;
    let terminated = false;
    try {
      this.publishStatus("busy", msg);
      switch (type) {
        case "kernel_info_request":
          this.handleKernelInfo(sock, msg);
          break;
        case "execute_request":
          await this.handleExecute(sock, msg);
          break;
        case "is_complete_request":
          this.handleIsComplete(sock, msg);
          break;
        case "inspect_request":
          this.handleInspect(sock, msg);
          break;
        case "complete_request":
          this.handleComplete(sock, msg);
          break;
        case "history_request":
          this.reply(sock, msg, "history_reply", { status: "ok", history: [] });
          break;
        case "comm_info_request":
          this.reply(sock, msg, "comm_info_reply", { status: "ok", comms: {} });
          break;
        case "interrupt_request":
          this.executor.interrupt();
          this.reply(sock, msg, "interrupt_reply", { status: "ok" });
          break;
        case "shutdown_request":
          this.reply(sock, msg, "shutdown_reply", {
            status: "ok",
            restart: !!msg.content.restart,
          });
          terminated = true;
          break;
        default:
          process.stderr.write(`cellgate-tslab: unknown msg_type ${type}\n`);
      }
    } catch (e) {
      process.stderr.write(`cellgate-tslab: ${type}: ${e && e.stack}\n`);
    } finally {
      this.publishStatus("idle", msg);
    }
    if (terminated) {
      // Let the reply and the idle status leave before exiting.
      setTimeout(() => {
        try {
          this.close();
        } finally {
          setTimeout(() => process.exit(0), 50);
        }
      }, 50);
    }
  }

  reply(sock, msg, type, content) {
    const r = msg.createReply(type);
    r.content = content;
    r.signAndSend(this.connInfo.key, sock);
  }

  // Stream text is gathered per parent and stream name and sent when the
  // event loop turns, or at STREAM_CHUNK (ipykernel sends its streams every
  // 0.2 s): a loop of 3000 console.log calls is one message, not 3000 that
  // the publisher would drop past its high-water mark of 1000.
  publish(parent, type, content) {
    if (type === "stream") {
      this.stream(parent, content.name, content.text);
      return;
    }
    this.flushStream();
    const r = parent.createReply(type);
    r.content = content;
    r.signAndSend(this.connInfo.key, this.iopub);
  }

  stream(parent, name, text) {
    const held = this.held;
    if (held && (held.parent !== parent || held.name !== name)) this.flushStream();
    if (!this.held) {
      this.held = { parent, name, text: "" };
      setImmediate(() => this.flushStream());
    }
    this.held.text += text;
    if (this.held.text.length >= STREAM_CHUNK) this.flushStream();
  }

  flushStream() {
    const held = this.held;
    if (!held) return;
    this.held = null;
    const r = held.parent.createReply("stream");
    r.content = { name: held.name, text: held.text };
    r.signAndSend(this.connInfo.key, this.iopub);
  }

  publishStatus(state, parent) {
    this.publish(parent, "status", { execution_state: state });
  }

  handleKernelInfo(sock, msg) {
    this.reply(sock, msg, "kernel_info_reply", this.handler.handleKernel());
  }

  handleCommInfoRequest(sock, msg) {
    this.reply(sock, msg, "comm_info_reply", { status: "ok", comms: {} });
  }

  async handleExecute(sock, msg) {
    const req = msg.content;
    req[FROM_AGENT] = fromAgent(msg);
    const writeStream = (name, text) =>
      this.publish(msg, "stream", { name, text });
    const writeDisplayData = (data, update) =>
      this.publish(msg, update ? "update_display_data" : "display_data", data);
    const content = await this.handler.handleExecute(
      req,
      writeStream,
      writeDisplayData
    );
    const out = req.cellgate;
    if (out && content.status === "ok") {
      if (out.diagnostics.length > 0) {
        writeStream("stderr", out.diagnostics.join("\n") + "\n");
      }
      if (out.hasResult && !req.silent) {
        const data = { "text/plain": util.inspect(out.result) };
        const json = req[FROM_AGENT] ? plainJson(out.result) : undefined;
        if (json !== undefined) data["application/json"] = json;
        this.publish(msg, "execute_result", {
          execution_count: content.execution_count,
          data,
          metadata: {},
        });
      }
    } else if (content.status === "error") {
      let err = out && out.error;
      if (!err && out && out.diagnostics.length > 0) {
        err = {
          ename: "CompileError",
          evalue: out.diagnostics[0],
          traceback: out.diagnostics,
        };
      }
      if (!err) {
        err = { ename: "Error", evalue: "execution failed", traceback: [] };
      }
      Object.assign(content, err);
      this.publish(msg, "error", err);
    } else if (content.status === "aborted") {
      Object.assign(content, {
        ename: "Aborted",
        evalue: "an earlier cell failed",
        traceback: [],
      });
    }
    this.reply(sock, msg, "execute_reply", content);
  }
}

/* ---- start -------------------------------------------------------------- */

const convs = new ConverterSet(jsKernel);
convs.node; // warm up the converter
if (makeCodeCache) {
  // The cache holds the functions compiled so far: those of a start and a cell.
  convs.node.convert("", "const x = [1].map((v) => v + 1); await x");
  const tmp = `${CODE_CACHE}.${process.pid}`; // a kernel starting meanwhile reads all or nothing
  fs.writeFileSync(tmp, tsScript.createCachedData());
  fs.renameSync(tmp, CODE_CACHE);
  process.exit(0);
}
const executor = createExecutor(process.cwd(), convs, executorConsole);
const server = new Server(new Handler(executor, jsKernel), configPath, executor);
process.on("SIGINT", () => executor.interrupt());
process.on("uncaughtException", (err) => {
  console.error("Uncaught exception:", err);
});
process.on("unhandledRejection", (reason) => {
  console.error("Unhandled promise rejection:", reason);
});
if (!fs.existsSync(configPath)) {
  process.stderr.write(`cellgate-tslab: no connection file ${configPath}\n`);
  process.exit(2);
}
server.init().catch((e) => {
  process.stderr.write(`cellgate-tslab: cannot bind: ${e && e.stack}\n`);
  process.exit(1);
});
