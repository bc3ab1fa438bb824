#!/usr/bin/env node
// Drives Switchboard's A2A endpoint with the official A2A JS SDK's v0.3
// client (LegacyJsonRpcTransport from @a2a-js/sdk/compat/v0_3/client,
// pinned by scripts/npm-setup.sh): message/send with kind:"text" parts,
// message/stream, tasks/get and tasks/cancel, each answer checked by the
// SDK's own 0.3 parsing.
//
// Prints one JSON object per line to stdout, one per step:
//   {"step":"load"|"send"|"stream"|"get"|"cancel"|"done", "ok":true, ...}
// and on the first failure {"step":..., "ok":false, "error":"..."} and exit code 1.
//
// Usage: node a2a_js_v03_client.mjs --url http://127.0.0.1:PORT [--npm-cache DIR]
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
  console.error("usage: a2a_js_v03_client.mjs --url URL");
  process.exit(2);
}
const cache = isAbsolute(args["npm-cache"]) ? args["npm-cache"] : resolve(args["npm-cache"]);
const sdkDir = join(cache, "node_modules", "@a2a-js", "sdk", "dist");

let LegacyJsonRpcTransport, Role, TaskState;
try {
  ({ LegacyJsonRpcTransport } = await import(pathToFileURL(join(sdkDir, "compat", "v0_3", "client", "index.js")).href));
  ({ Role, TaskState } = await import(pathToFileURL(join(sdkDir, "index.js")).href));
  emit({ step: "load", ok: true, node: process.versions.node });
} catch (err) {
  fail("load", err);
}

const token = process.env.A2A_PEER_TOKEN ?? "";
const authFetch = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", "Bearer " + token);
  return fetch(input, { ...init, headers });
};
const client = new LegacyJsonRpcTransport({ endpoint: args.url + "/a2a/v1", fetchImpl: authFetch });

const text = (t) => ({ content: { $case: "text", value: t } });
const message = (t, contextId) => ({
  message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [text(t)], ...(contextId ? { contextId } : {}) },
});
const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const replyText = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join("");
const stateName = (s) => TaskState[s] ?? String(s);
// taskOf unwraps a send result: the SDK gives a task (or a message).
const taskOf = (r) => r?.payload?.value ?? r?.task ?? r;

async function step(name, fn) {
  try {
    emit({ step: name, ok: true, ...(await fn()) });
  } catch (err) {
    fail(name, err);
  }
}

let sent;
await step("send", async () => {
  sent = taskOf(await client.sendMessage(message("hello over a2a 0.3", "v03-ctx")));
  return { taskId: sent.id, contextId: sent.contextId, state: stateName(sent.status?.state), reply: replyText(sent) };
});

await step("stream", async () => {
  const kinds = [];
  let reply = "";
  let final = "";
  for await (const ev of client.sendMessageStream(message("streamed 0.3", "v03-ctx"))) {
    const c = ev.payload?.$case ?? Object.keys(ev).find((k) => ev[k]);
    kinds.push(c);
    const v = ev.payload?.value ?? ev[c];
    if (c === "artifactUpdate") reply += textOf(v.artifact?.parts);
    if (c === "statusUpdate" || c === "task") final = stateName(v.status?.state);
  }
  return { kinds, reply, final };
});

await step("get", async () => {
  const task = await client.getTask({ id: sent.id });
  return { taskId: task.id, state: stateName(task.status?.state), reply: replyText(task) };
});

await step("cancel", async () => {
  const slow = taskOf(await client.sendMessage({ ...message("slow work\n/sleep 30s", "v03-ctx"), configuration: { returnImmediately: true } }));
  const canceled = await client.cancelTask({ id: slow.id });
  const m = canceled.status?.message;
  return { before: stateName(slow.status?.state), state: stateName(canceled.status?.state), messageContextId: m?.contextId ?? null, messageTaskId: m?.taskId ?? null, taskId: slow.id };
});

emit({ step: "done", ok: true });
