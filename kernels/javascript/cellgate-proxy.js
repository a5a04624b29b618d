/*
 * cellgate's Node.js preload under --egress proxy (NODE_OPTIONS=--require this file).
 *
 * Node's built-in fetch ignores HTTP_PROXY and HTTPS_PROXY (Node 20 has no
 * NODE_USE_ENV_PROXY), so sandboxed code's fetch would try to connect directly and
 * fail: the sandbox has no route. undici's EnvHttpProxyAgent (the library Node's
 * fetch is built on, kernels/javascript/node_modules) reads those variables and
 * NO_PROXY; made the global dispatcher, it carries every fetch through the proxy.
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
      undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent());
    } finally {
      process.emitWarning = emit;
    }
  } catch (e) {
    process.emitWarning(`cellgate: fetch does not go through the proxy: ${e.message}`);
  }
}
