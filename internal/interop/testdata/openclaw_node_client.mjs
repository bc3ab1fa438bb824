#!/usr/bin/env node
// Drives a gateway with the third-party reference client openclaw-node (0.14.0,
// protocol 4): connect, sessions.list, chat.send (with an idempotencyKey), wait for
// the run to finish (agent.wait plus the run's chat/agent events), chat.history.
//
// Prints one JSON object per line to stdout, one per step:
//   {"step":"load"|"connect"|"sessions.list"|"chat.send"|"wait"|"chat.history"|"done", "ok":true, ...}
// and on the first failure {"step":..., "ok":false, "error":"..."} and exit code 1.
// Exit code 2 means bad usage. Diagnostics go to stderr.
//
// Usage:
//   node [--experimental-websocket] openclaw_node_client.mjs --url ws://127.0.0.1:18789 --token T
//     [--session main] [--message "..."] [--timeout-ms 60000] [--history-limit 20]
//     [--identity-dir DIR] [--npm-cache DIR]
// Env fallbacks: OPENCLAW_GATEWAY_URL, OPENCLAW_GATEWAY_TOKEN, SWITCHBOARD_NPM_CACHE.
//
// openclaw-node is loaded from the npm cache filled by scripts/npm-setup.sh (default
// <repo>/.cache/npm). It needs a global WebSocket: node >= 22, or node 20/21 with
// --experimental-websocket. Its device identity (an Ed25519 key plus any device token
// the gateway issues) is written under --identity-dir, default a fresh temp dir that
// is removed on exit; never $HOME.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

let cleanup = () => {};
function fail(step, err, extra = {}) {
  const error = err instanceof Error ? err.message : String(err);
  emit({ step, ok: false, error, ...extra });
  cleanup();
  process.exit(1);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      url: { type: "string", default: process.env.OPENCLAW_GATEWAY_URL },
      token: { type: "string", default: process.env.OPENCLAW_GATEWAY_TOKEN },
      session: { type: "string", default: "main" },
      message: { type: "string", default: "hello from openclaw-node" },
      "timeout-ms": { type: "string", default: "60000" },
      "history-limit": { type: "string", default: "20" },
      "identity-dir": { type: "string" },
      "npm-cache": { type: "string", default: process.env.SWITCHBOARD_NPM_CACHE },
    },
  }));
} catch (err) {
  console.error(String(err));
  process.exit(2);
}
if (!args.url) {
  console.error("usage: openclaw_node_client.mjs --url ws://HOST:PORT [--token T] (or OPENCLAW_GATEWAY_URL)");
  process.exit(2);
}
const timeoutMs = Number(args["timeout-ms"]);
const historyLimit = Number(args["history-limit"]);
if (!(timeoutMs > 0) || !(historyLimit > 0)) {
  console.error("--timeout-ms and --history-limit must be positive numbers");
  process.exit(2);
}
const deadline = Date.now() + timeoutMs;
let current = "load";
const overall = setTimeout(() => fail(current, `timed out after ${timeoutMs} ms`), timeoutMs);
overall.unref();

// findRepoRoot walks up from this script to the directory holding go.mod.
function findRepoRoot(start) {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "go.mod"))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

// --- load ---------------------------------------------------------------------------
const here = dirname(fileURLToPath(import.meta.url));
const root = findRepoRoot(here);
let cache = args["npm-cache"] || ".cache/npm";
if (!isAbsolute(cache)) {
  if (!root) fail("load", `cannot resolve relative npm cache ${cache}: no go.mod above ${here}`);
  cache = resolve(root, cache);
}
const pkgDir = join(cache, "node_modules", "openclaw-node");
let OpenClawClient, clientVersion;
try {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  clientVersion = pkg.version;
  const entry = pkg.exports?.["."]?.import ?? pkg.module ?? pkg.main;
  ({ OpenClawClient } = await import(pathToFileURL(join(pkgDir, entry)).href));
} catch (err) {
  fail("load", `cannot load openclaw-node from ${pkgDir} (run scripts/npm-setup.sh): ${err.message}`);
}
if (typeof globalThis.WebSocket === "undefined") {
  fail("load", `node ${process.version} has no global WebSocket, which openclaw-node ${clientVersion} needs; use node >= 22 or node --experimental-websocket`);
}
emit({ step: "load", ok: true, client: "openclaw-node", version: clientVersion, node: process.version });

let identityDir = args["identity-dir"];
if (!identityDir) {
  identityDir = mkdtempSync(join(tmpdir(), "openclaw-node-"));
  const made = identityDir;
  cleanup = () => rmSync(made, { recursive: true, force: true });
}

const client = new OpenClawClient({
  url: args.url,
  token: args.token || undefined,
  deviceIdentityPath: join(identityDir, "device-identity.json"),
  autoReconnect: false,
});
// openclaw-node emits "error" on socket errors; without a listener EventEmitter throws.
const clientErrors = [];
client.on("error", (err) => {
  clientErrors.push(err instanceof Error ? err.message : String(err));
});

// Events of the run we start, keyed by runId (collected from connect on).
const runEvents = [];
client.on("event", (ev) => {
  if (ev.event === "chat" || ev.event === "agent") runEvents.push(ev);
});

// --- connect ------------------------------------------------------------------------
current = "connect";
let hello;
try {
  hello = await client.connect();
} catch (err) {
  fail("connect", err, { clientErrors });
}
emit({
  step: "connect",
  ok: true,
  protocol: hello.protocol,
  server: hello.server,
  methods: hello.features?.methods?.length ?? 0,
  hasChatSend: client.hasMethod("chat.send"),
  auth: hello.auth ? { role: hello.auth.role, scopes: hello.auth.scopes, deviceToken: typeof hello.auth.deviceToken === "string" } : null,
});

// --- sessions.list ------------------------------------------------------------------
current = "sessions.list";
try {
  const payload = await client.sessions.list({ limit: 20 });
  emit({ step: "sessions.list", ok: true, payload });
} catch (err) {
  fail("sessions.list", err);
}

// --- chat.send ----------------------------------------------------------------------
// openclaw-node's own sessions.send() omits idempotencyKey, which protocol 4
// requires, so send the request directly.
current = "chat.send";
const idempotencyKey = `oc-node-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
let runId;
try {
  const res = await client.request("chat.send", {
    sessionKey: args.session,
    message: args.message,
    idempotencyKey,
  });
  runId = res.payload?.runId ?? idempotencyKey;
  emit({ step: "chat.send", ok: true, idempotencyKey, payload: res.payload });
} catch (err) {
  fail("chat.send", err, { idempotencyKey });
}

// --- wait ---------------------------------------------------------------------------
// agent.wait long-polls; "pending"/"timeout" mean ask again.
current = "wait";
const terminalChat = (ev) => ev.event === "chat" && ev.payload?.runId === runId &&
  ["final", "error", "aborted"].includes(ev.payload?.state);
let waited;
try {
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) fail("wait", `run ${runId} not finished before the deadline`);
    waited = await client.agentWait(runId, { timeoutMs: Math.min(left, 30000) });
    if (waited?.status !== "pending" && waited?.status !== "timeout") break;
  }
} catch (err) {
  fail("wait", err, { runId });
}
// The terminal chat event may trail the agent.wait answer; give it a moment.
for (let i = 0; i < 50 && !runEvents.some(terminalChat); i++) {
  await new Promise((r) => setTimeout(r, 100));
}
const mine = runEvents.filter((ev) => ev.payload?.runId === runId);
const final = mine.find(terminalChat);
const text = (final?.payload?.message?.content ?? [])
  .filter((c) => c?.type === "text")
  .map((c) => c.text)
  .join("");
const waitStep = {
  step: "wait",
  ok: waited?.status === "ok",
  runId,
  agentWait: waited,
  chatEvents: mine.filter((ev) => ev.event === "chat").length,
  agentEvents: mine.filter((ev) => ev.event === "agent").length,
  chatFinalState: final?.payload?.state ?? null,
  text,
};
if (!waitStep.ok) {
  waitStep.error = `agent.wait status ${JSON.stringify(waited?.status)}`;
  emit(waitStep);
  cleanup();
  process.exit(1);
}
emit(waitStep);

// --- chat.history -------------------------------------------------------------------
current = "chat.history";
try {
  const payload = await client.sessions.history(args.session, { limit: historyLimit });
  emit({ step: "chat.history", ok: true, payload });
} catch (err) {
  fail("chat.history", err);
}

current = "done";
await client.disconnect();
emit({ step: "done", ok: true });
cleanup();
process.exit(0);
