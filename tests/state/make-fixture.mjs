// Makes tests/state/<release>/: the state dir a release's server leaves after a short
// session, for tests/e2e/state_format.test.mjs (a later cellgate must read it). Run it with
// that release's binary, once, when a release is made (root, runc, the kernel image):
//   git worktree add /tmp/rel <the release's commit>   # 0.1.0: 8d1ab9e
//   (cd /tmp/rel && cmake -S . -B build && cmake --build build -j"$(nproc)")
//   node tests/state/make-fixture.mjs /tmp/rel/build/cellgate tests/state/0.1.0
// What is kept: the tokens, the execution log (JSON lines and its SQLite index) and the
// script library; what the server remakes at each start (etc, rootfs, packages, runtime-*,
// instances) is left out.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';

const [bin, out] = process.argv.slice(2);
if (!bin || !out) {
  console.error('usage: node tests/state/make-fixture.mjs RELEASE_BINARY OUT_DIR');
  process.exit(2);
}
const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-fixture-'));
const transport = new StdioClientTransport({ command: bin, args: ['mcp', '--state-dir', state, '--pool', '0'], stderr: 'inherit' });
const client = new Client({ name: 'fixture', version: '0' });
await client.connect(transport);
const call = (name, args) => client.callTool({ name, arguments: args });
await call('execute_code', { language: 'python', session_id: 'sess_release010', code: 'x = 41\nprint("token-run-one", x + 1)' });
await call('execute_code', { language: 'bash', session_id: 'sess_release010', code: 'echo token-run-two > /mnt/data/kept.txt; cat /mnt/data/kept.txt' });
await call('save_script', { name: 'release_hello', language: 'python', code: 'print("token-script")', description: 'saved by 0.1.0' });
await call('execute_code', { language: 'python', code: 'print("token-oneshot")' });
await client.close();
fs.mkdirSync(out, { recursive: true });
for (const name of ['admin-token', 'gateway-token', 'logs', 'scripts'])
  fs.cpSync(path.join(state, name), path.join(out, name), { recursive: true });
fs.rmSync(state, { recursive: true, force: true });
console.log(`made ${out}`);
