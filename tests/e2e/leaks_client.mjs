// A stand-in for an MCP client that spawned `cellgate mcp` over stdio (leaks.test.mjs kills
// both with SIGKILL): argv STATE BIN [server args...]. Starts two sessions (Python and bash),
// leaves a one-shot running and another being created, prints {serverPid} as one line and
// waits to be killed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [state, bin, ...extra] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin, args: ['mcp', '--state-dir', state, ...extra], stderr: 'ignore',
});
const client = new Client({ name: 'leaks-client', version: '0' }, { capabilities: {} });
await client.connect(transport);
const exec = (args) => client.callTool({ name: 'execute_code', arguments: args }, undefined, { timeout: 600000 });
for (const args of [{ language: 'python', code: 'x = 1', session_id: 'py' },
  { language: 'bash', code: 'echo hi', session_id: 'sh' }]) {
  const r = await exec(args);
  if (r.structuredContent?.status !== 'success') throw new Error(JSON.stringify(r.structuredContent));
}
exec({ language: 'python', code: 'import time; time.sleep(600)' }).catch(() => {});
await new Promise((resolve) => setTimeout(resolve, 2500));
exec({ language: 'python', code: 'print(1)' }).catch(() => {});
await new Promise((resolve) => setTimeout(resolve, 150));
process.stdout.write(JSON.stringify({ serverPid: transport._process.pid }) + '\n');
setInterval(() => {}, 1 << 30);
