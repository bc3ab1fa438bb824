#!/usr/bin/env node
// An A2A echo agent written with the official A2A JS SDK (npm @a2a-js/sdk,
// pinned by scripts/npm-setup.sh): DefaultRequestHandler and the SDK's
// JSON-RPC transport handler behind a plain node:http server, so that a
// Switchboard gateway can use it as a remote peer. It answers every message
// with a completed task whose artifact is "js echo: <text>"; a message
// containing "slow" stays working.
//
// Prints {"listening":"http://127.0.0.1:PORT"} on stdout once serving
// (the card is at /.well-known/agent-card.json, JSON-RPC at /a2a/v1), and
// one {"received":{...}} line per message (its text, contextId and
// metadata). Requests must carry "Authorization: Bearer $A2A_AGENT_TOKEN".
//
// Usage: node a2a_js_echo_agent.mjs [--npm-cache DIR]

import { createServer } from "node:http";
import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: { "npm-cache": { type: "string", default: process.env.SWITCHBOARD_NPM_CACHE ?? ".cache/npm" } },
});
const cache = isAbsolute(args["npm-cache"]) ? args["npm-cache"] : resolve(args["npm-cache"]);
const sdkDir = join(cache, "node_modules", "@a2a-js", "sdk", "dist");
const { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, AgentEvent, UnauthenticatedUser, defaultServerCallContextBuilder } =
  await import(pathToFileURL(join(sdkDir, "server", "index.js")).href);
const { Role, TaskState } = await import(pathToFileURL(join(sdkDir, "index.js")).href);

const token = process.env.A2A_AGENT_TOKEN ?? "";
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const textOf = (msg) => (msg?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const textPart = (t) => ({ content: { $case: "text", value: t } });

const executor = {
  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    emit({ received: { text, contextId: ctx.contextId, metadata: ctx.userMessage?.metadata ?? null } });
    const base = { id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined };
    bus.publish(AgentEvent.task({ ...base, status: { state: TaskState.TASK_STATE_WORKING } }));
    if (text.includes("slow")) {
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true,
      artifact: { artifactId: "reply", name: "reply", parts: [textPart("js echo: " + text)] },
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_COMPLETED },
    }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: "", status: { state: TaskState.TASK_STATE_CANCELED } }));
    bus.finished();
  },
};

let base = "";
const card = () => ({
  name: "js-echo", description: "Echoes messages (A2A JS SDK)", version: "1.0.0",
  supportedInterfaces: [{ url: base + "/a2a/v1", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
  capabilities: { streaming: false, pushNotifications: false },
  defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "echo", description: "echo", tags: ["echo"] }],
});
const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
const rpc = new JsonRpcTransportHandler(handler);

const server = createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/.well-known/agent-card.json") {
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(card()));
    return;
  }
  if (req.method !== "POST" || req.url !== "/a2a/v1") {
    res.writeHead(404).end();
    return;
  }
  if (req.headers.authorization !== "Bearer " + token) {
    res.writeHead(401).end();
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  const context = defaultServerCallContextBuilder({ user: new UnauthenticatedUser(), headers: req.headers });
  const out = await rpc.handle(body, context);
  res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(out));
});
server.listen(0, "127.0.0.1", () => {
  base = "http://127.0.0.1:" + server.address().port;
  emit({ listening: base });
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
