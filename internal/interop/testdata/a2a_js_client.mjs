#!/usr/bin/env node
// Drives Switchboard's A2A endpoint with the official A2A JS SDK (npm
// @a2a-js/sdk, pinned by scripts/npm-setup.sh): its ClientFactory reads the
// agent card and picks the JSON-RPC transport; then a blocking send, a
// streamed send, GetTask, ListTasks, the cancel of a stalled run, and a
// client with a wrong token.
//
// Prints one JSON object per line to stdout, one per step:
//   {"step":"load"|"card"|"send"|"stream"|"get"|"list"|"cancel"|"wrong-token"|"done", "ok":true, ...}
// and on the first failure {"step":..., "ok":false, "error":"..."} and exit code 1.
//
// Usage: node a2a_js_client.mjs --url http://127.0.0.1:PORT [--npm-cache DIR]
// The peer token comes from A2A_PEER_TOKEN (never argv).

import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}
function fail(step, err) {
  emit({ step, ok: false, error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
}

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    "npm-cache": { type: "string", default: process.env.SWITCHBOARD_NPM_CACHE ?? ".cache/npm" },
  },
});
if (!args.url) {
  console.error("usage: a2a_js_client.mjs --url URL");
  process.exit(2);
}
const cache = isAbsolute(args["npm-cache"]) ? args["npm-cache"] : resolve(args["npm-cache"]);
const sdkDir = join(cache, "node_modules", "@a2a-js", "sdk", "dist");

let ClientFactory, JsonRpcTransportFactory, Role, TaskState;
try {
  ({ ClientFactory, JsonRpcTransportFactory } = await import(pathToFileURL(join(sdkDir, "client", "index.js")).href));
  ({ Role, TaskState } = await import(pathToFileURL(join(sdkDir, "index.js")).href));
  emit({ step: "load", ok: true, node: process.versions.node });
} catch (err) {
  fail("load", err);
}

// clientWith builds an SDK client whose requests carry token.
async function clientWith(token) {
  const authFetch = (input, init = {}) => {
    const headers = new Headers(init.headers || {});
    headers.set("Authorization", "Bearer " + token);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })] });
  return factory.createFromUrl(args.url);
}

const text = (t) => ({ content: { $case: "text", value: t } });
const message = (t, contextId) => ({
  message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [text(t)], ...(contextId ? { contextId } : {}) },
});
const replyText = (task) =>
  (task.artifacts ?? []).flatMap((a) => a.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const stateName = (s) => TaskState[s] ?? String(s);

async function step(name, fn) {
  try {
    emit({ step: name, ok: true, ...(await fn()) });
  } catch (err) {
    fail(name, err);
  }
}

const token = process.env.A2A_PEER_TOKEN ?? "";
let client;
await step("card", async () => {
  client = await clientWith(token);
  return {};
});

let sent;
await step("send", async () => {
  sent = await client.sendMessage(message("hello over a2a"));
  return { taskId: sent.id, contextId: sent.contextId, state: stateName(sent.status?.state), reply: replyText(sent) };
});

await step("stream", async () => {
  const kinds = [];
  let reply = "";
  let final = "";
  for await (const ev of client.sendMessageStream(message("streamed hello", sent.contextId))) {
    const c = ev.payload?.$case ?? Object.keys(ev).find((k) => ev[k]);
    kinds.push(c);
    const v = ev.payload?.value ?? ev[c];
    if (c === "artifactUpdate") reply += (v.artifact?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
    if (c === "statusUpdate") final = stateName(v.status?.state);
    if (c === "task") final = stateName(v.status?.state);
  }
  return { kinds, reply, final };
});

await step("get", async () => {
  const task = await client.getTask({ id: sent.id });
  return { taskId: task.id, state: stateName(task.status?.state), reply: replyText(task) };
});

await step("list", async () => {
  const res = await client.listTasks({});
  return { count: (res.tasks ?? []).length, ids: (res.tasks ?? []).map((t) => t.id) };
});

await step("cancel", async () => {
  const slow = await client.sendMessage({
    ...message("slow work\n/sleep 30s"),
    configuration: { returnImmediately: true },
  });
  const canceled = await client.cancelTask({ id: slow.id });
  return { before: stateName(slow.status?.state), state: stateName(canceled.status?.state) };
});

await step("wrong-token", async () => {
  try {
    const bad = await clientWith("not-the-token");
    await bad.sendMessage(message("let me in"));
  } catch (err) {
    return { refused: true, error: err instanceof Error ? err.message : String(err) };
  }
  return { refused: false };
});

emit({ step: "done", ok: true });
