// Drives an MCP server with the reference TypeScript client (@modelcontextprotocol/sdk)
// from the npm cache: connect over stdio (--command, args after "--") or streamable
// HTTP (--url, token from MCP_BEARER_TOKEN), list tools, then run the calls given as
// a JSON array in --calls ([{name, arguments, progress?}]), then read --resource if
// given. Prints one JSON object per step: {"step", "ok", ...}; the first failure
// ends the run with exit 1.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const argv = process.argv.slice(2);
const opts = { calls: "[]" };
const rest = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--") { rest.push(...argv.slice(i + 1)); break; }
  opts[a.replace(/^--/, "")] = argv[++i];
}
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const fail = (step, err) => { out({ step, ok: false, error: String(err && err.stack || err) }); process.exit(1); };
const sdk = (p) => import(pathToFileURL(join(opts["npm-cache"], "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", p)).href);

const timeoutMs = Number(opts["timeout-ms"] || 60000);
setTimeout(() => fail("timeout", `no result after ${timeoutMs}ms`), timeoutMs).unref();

let client, transport;
try {
  const { Client } = await sdk("client/index.js");
  client = new Client({ name: "switchboard-interop", version: "1.0.0" });
  if (opts.url) {
    const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
    const headers = { Authorization: `Bearer ${process.env.MCP_BEARER_TOKEN || ""}` };
    if (opts.session) headers["X-Switchboard-Session"] = opts.session;
    transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
  } else {
    const { StdioClientTransport } = await sdk("client/stdio.js");
    transport = new StdioClientTransport({ command: opts.command, args: rest, env: { ...process.env }, stderr: "inherit" });
  }
  await client.connect(transport);
  out({ step: "connect", ok: true, server: client.getServerVersion(), protocol: transport.protocolVersion || null });
} catch (e) { fail("connect", e); }

try {
  const { tools } = await client.listTools();
  out({ step: "listTools", ok: true, tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })) });
} catch (e) { fail("listTools", e); }

for (const call of JSON.parse(opts.calls)) {
  try {
    const progress = [];
    const res = await client.callTool({ name: call.name, arguments: call.arguments || {} }, undefined,
      call.progress ? { onprogress: (p) => progress.push(p), timeout: timeoutMs } : { timeout: timeoutMs });
    out({ step: "call:" + call.name, ok: true, result: res, progress });
  } catch (e) { fail("call:" + call.name, e); }
}

if (opts.resource) {
  try {
    const res = await client.readResource({ uri: opts.resource });
    out({ step: "readResource", ok: true, result: res });
  } catch (e) { fail("readResource", e); }
}
await client.close();
out({ step: "done", ok: true });
process.exit(0);
