#!/usr/bin/env node
// An A2A echo agent built the way the official A2A JS SDK (npm @a2a-js/sdk,
// pinned by scripts/npm-setup.sh) documents it: an Express app with the
// SDK's agentCardHandler and jsonRpcHandler from @a2a-js/sdk/server/express,
// v0.3 compatibility (legacyCompat) on, so the SDK itself checks each
// request's A2A-Version header against the card. It answers every message
// with a completed task whose artifact is "js echo: <text>".
//
// --mode both: the card lists a 1.0 and a 0.3 JSON-RPC interface (one URL);
// --mode v03:  the card lists only a 0.3 JSON-RPC interface.
// --no-stream: streaming requests are refused (-32601, as the reference
// does), so clients poll; each poll prints {"event":{"kind":"polled"}}.
//
// A message whose text contains "work until canceled" gets a working task
// that never ends by itself; canceling it prints
// {"event":{"kind":"canceled","taskId":...,"version":...,"method":...}}.
//
// Prints {"listening":"http://127.0.0.1:PORT"} on stdout once serving (the
// card is at /.well-known/agent-card.json, JSON-RPC at /a2a/v1), and one
// {"received":{...}} line per message (its text, contextId, the request's
// A2A-Version header and JSON-RPC method). Requests must carry
// "Authorization: Bearer $A2A_AGENT_TOKEN".
//
// Usage: node a2a_js_express_agent.mjs --mode both|v03 [--npm-cache DIR]

import { createRequire } from "node:module";
import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    mode: { type: "string", default: "both" },
    "no-stream": { type: "boolean", default: false },
    "npm-cache": { type: "string", default: process.env.SWITCHBOARD_NPM_CACHE ?? ".cache/npm" },
  },
});
const cache = isAbsolute(args["npm-cache"]) ? args["npm-cache"] : resolve(args["npm-cache"]);
const sdkDir = join(cache, "node_modules", "@a2a-js", "sdk", "dist");
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = await import(pathToFileURL(join(sdkDir, "server", "index.js")).href);
const { agentCardHandler, jsonRpcHandler, UserBuilder } = await import(pathToFileURL(join(sdkDir, "server", "express", "index.js")).href);
const { TaskState } = await import(pathToFileURL(join(sdkDir, "index.js")).href);
const express = createRequire(join(cache, "package.json"))("express");

const token = process.env.A2A_AGENT_TOKEN ?? "";
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const textOf = (msg) => (msg?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const textPart = (t) => ({ content: { $case: "text", value: t } });

let current = {}; // the A2A-Version header and method of the request being handled
const pending = new Map(); // task id → resolves the execution working until canceled
const executor = {
  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    emit({ received: { text, contextId: ctx.contextId, ...current } });
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage], status: { state: TaskState.TASK_STATE_WORKING } }));
    if (text.includes("work until canceled")) { // cancelTask ends it
      await new Promise((resolve) => pending.set(ctx.taskId, resolve));
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true,
      artifact: { artifactId: "reply", name: "reply", parts: [textPart("js echo: " + text)] },
    }));
    bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_COMPLETED } }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    emit({ event: { kind: "canceled", taskId, ...current } });
    pending.get(taskId)?.();
    pending.delete(taskId);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: "", status: { state: TaskState.TASK_STATE_CANCELED } }));
    bus.finished();
  },
};

let base = "";
const card = () => {
  const iface = (v) => ({ url: base + "/a2a/v1", protocolBinding: "JSONRPC", protocolVersion: v });
  return {
    name: "js-express-echo", description: "Echoes messages (A2A JS SDK, Express)", version: "1.0.0",
    supportedInterfaces: args.mode === "v03" ? [iface("0.3")] : [iface("1.0"), iface("0.3")],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "echo", description: "echo", tags: ["echo"] }],
  };
};
const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
handler.getAgentCard = async () => card(); // the card names the port, known once listening

const app = express();
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => card(), legacyCompat: { enabled: true } }));
app.use("/a2a/v1", (req, res, next) => {
  if (req.headers.authorization !== "Bearer " + token) {
    res.status(401).end();
    return;
  }
  next();
}, express.json(), (req, res, next) => {
  current = { version: req.headers["a2a-version"] ?? null, method: req.body?.method ?? null };
  if (args["no-stream"] && (current.method === "message/stream" || current.method === "SendStreamingMessage")) {
    res.json({ jsonrpc: "2.0", id: req.body?.id ?? null, error: { code: -32601, message: "Method not found" } });
    return;
  }
  if (current.method === "tasks/get" || current.method === "GetTask") emit({ event: { kind: "polled" } });
  next();
}, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));

const server = app.listen(0, "127.0.0.1", () => {
  base = "http://127.0.0.1:" + server.address().port;
  emit({ listening: base });
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
