// Preloaded (NODE_OPTIONS=--require) into the JavaScript kernel by test_javascript_kernel's
// UntypedStartTests: records the TypeScript declaration files the process reads, in
// globalThis.__dtsReads, which a cell can read.
"use strict";
const fs = require("fs");
const real = fs.readFileSync;
globalThis.__dtsReads = [];
fs.readFileSync = function (file, ...rest) {
  if (typeof file === "string" && file.endsWith(".d.ts")) globalThis.__dtsReads.push(file);
  return real.call(this, file, ...rest);
};
