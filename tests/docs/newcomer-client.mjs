// The README's Claude Code command, driven the way Claude Code drives it: the official MCP
// TypeScript SDK client starts the command on stdio, then initialize, tools/list and one
// execute_code (python). Run by tests/docs/newcomer.sh from a fresh clone, whose
// tests/e2e/node_modules holds the SDK (what scripts/setup.sh test installs there).
//   node newcomer-client.mjs COMMAND [ARG...]
// Prints one line per step; exits 1 with the server's stderr on any failure.

const sdk = new URL('../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/', import.meta.url);
const { Client } = await import(new URL('index.js', sdk));
const { StdioClientTransport } = await import(new URL('stdio.js', sdk));

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: newcomer-client.mjs COMMAND [ARG...]');
  process.exit(2);
}
// The SDK's default environment (HOME, PATH, USER...), as a client that sets none.
const transport = new StdioClientTransport({ command, args, stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (chunk) => {
  stderr = (stderr + chunk.toString('utf8')).slice(-20000);
});
const client = new Client({ name: 'newcomer', version: '1.0.0' });
try {
  await client.connect(transport);
  console.log(`initialize: ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  console.log(`tools/list: ${names.length} tools`);
  if (!names.includes('execute_code')) throw new Error(`no execute_code in tools/list: ${names.join(', ')}`);
  const result = await client.callTool(
    { name: 'execute_code', arguments: { language: 'python', code: 'print(6 * 7)' } },
    undefined,
    { timeout: 300000 },
  );
  const text = (result.content ?? []).map((c) => c.text ?? '').join('\n');
  console.log(`execute_code: ${JSON.stringify(text).slice(0, 200)}`);
  if (result.isError || !/\b42\b/.test(text)) throw new Error(`execute_code did not print 42: ${JSON.stringify(result)}`);
  await client.close();
} catch (error) {
  console.error(`newcomer-client: ${error?.stack ?? error}`);
  console.error(`server stderr (tail):\n${stderr}`);
  await client.close().catch(() => {});
  process.exit(1);
}
