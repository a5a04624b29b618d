/*
 * cellgate's Node.js preload under --egress proxy (NODE_OPTIONS=--require this file).
 *
 * Node's built-in fetch ignores HTTP_PROXY and HTTPS_PROXY (Node 20 has no
 * NODE_USE_ENV_PROXY), so sandboxed code's fetch would try to connect directly and
 * fail: the sandbox has no route. undici's EnvHttpProxyAgent (the library Node's
 * fetch is built on, kernels/javascript/node_modules) reads those variables and
 * NO_PROXY; made the global dispatcher, it carries every fetch through the proxy.
 * Plain http:// requests are sent to the proxy as they are (proxyTunnel: false), so a
 * refused one is the proxy's 403 with its one-line reason; an https:// one is a
 * CONNECT, whose refusal undici reports as "fetch failed" with the reason buried in
 * error.cause.cause: the error's message says it instead.
 * http.request and https.request are left as they are (their callers pass an agent).
 * Only the environment is read; nothing is written.
 */
"use strict";

if (process.env.HTTPS_PROXY || process.env.HTTP_PROXY) {
  try {
    const undici = require(require("path").join(__dirname, "node_modules", "undici"));
    // undici warns that EnvHttpProxyAgent is experimental, once per process: every
    // node command would print it to the model. That one warning is dropped.
    const emit = process.emitWarning;
    process.emitWarning = (warning, ...rest) => {
      const code = typeof rest[0] === "object" ? rest[0] && rest[0].code : rest[1];
      if (code !== "UNDICI-EHPA") emit.call(process, warning, ...rest);
    };
    try {
      undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent({ proxyTunnel: false }));
    } finally {
      process.emitWarning = emit;
    }
    const fetch = globalThis.fetch;
    if (typeof fetch === "function") {
      globalThis.fetch = async function (input, init) {
        try {
          return await fetch(input, init);
        } catch (e) {
          for (let c = e, depth = 0; c && depth < 8; c = c.cause, depth++) {
            const m = /Proxy response \((\d+)\)/.exec((c && c.message) || "");
            if (m && e instanceof Error) {
              e.message =
                `fetch failed: the egress proxy refused the tunnel (HTTP ${m[1]}): this host or ` +
                "port is not allowed from this sandbox, or a limit was reached " +
                "(the allowed hosts are in the tool descriptions)";
              break;
            }
          }
          throw e;
        }
      };
    }
  } catch (e) {
    process.emitWarning(`cellgate: fetch does not go through the proxy: ${e.message}`);
  }
}
