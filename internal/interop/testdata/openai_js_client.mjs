#!/usr/bin/env node
// Drives a gateway's OpenAI-compatible HTTP API with the official OpenAI JS
// client (npm `openai`, pinned by scripts/npm-setup.sh): models.list,
// models.retrieve, a plain chat completion, a streamed one, two completions
// sharing one conversation through `user`, a client function tool call and
// its follow-up (plain and streamed), a response and its continuation
// through previous_response_id, a streamed response, and an unknown model.
//
// Prints one JSON object per line to stdout, one per step:
//   {"step":"load"|"models"|"chat"|"chat.stream"|"chat.user"|"chat.tools"|"chat.tools.stream"|"responses"|
//           "responses.previous"|"responses.stream"|"unknown-model"|"done", "ok":true, ...}
// and on the first failure {"step":..., "ok":false, "error":"..."} and exit code 1.
//
// With --embeddings it runs only the embeddings step instead: two
// embeddings.create calls with the client's defaults (it asks for
// encoding_format "base64" and decodes the vectors itself) and one with
// encoding_format "float"; it prints the first values of each vector and,
// per call, the format asked for and the JSON type of the vector answered.
//
// Usage: node openai_js_client.mjs --base-url http://127.0.0.1:PORT/v1 [--npm-cache DIR] [--embeddings]
// The token comes from OPENCLAW_GATEWAY_TOKEN (never argv).

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
    "base-url": { type: "string" },
    embeddings: { type: "boolean", default: false },
    "npm-cache": { type: "string", default: process.env.SWITCHBOARD_NPM_CACHE ?? ".cache/npm" },
  },
});
if (!args["base-url"]) {
  console.error("usage: openai_js_client.mjs --base-url URL");
  process.exit(2);
}
const cache = isAbsolute(args["npm-cache"]) ? args["npm-cache"] : resolve(args["npm-cache"]);

let OpenAI;
try {
  const entry = join(cache, "node_modules", "openai", "index.mjs");
  ({ default: OpenAI } = await import(pathToFileURL(entry).href));
  emit({ step: "load", ok: true, node: process.versions.node });
} catch (err) {
  fail("load", err);
}

// wire records, per embeddings call, the encoding_format the client asked
// for and the JSON type of the first vector the gateway answered with.
const wire = [];
const recordingFetch = async (input, init = {}) => {
  const res = await fetch(input, init);
  if (String(input).endsWith("/embeddings")) {
    const body = await res.clone().json().catch(() => ({}));
    const first = body?.data?.[0]?.embedding;
    wire.push({ asked: JSON.parse(init.body ?? "{}").encoding_format ?? null, got: Array.isArray(first) ? "array" : typeof first });
  }
  return res;
};

const client = new OpenAI({
  baseURL: args["base-url"],
  apiKey: process.env.OPENCLAW_GATEWAY_TOKEN ?? "",
  maxRetries: 0,
  timeout: 60_000,
  fetch: recordingFetch,
});

async function step(name, fn) {
  try {
    emit({ step: name, ok: true, ...(await fn()) });
  } catch (err) {
    fail(name, err);
  }
}

if (args.embeddings) {
  await step("embeddings", async () => {
    const first = (r) => r.data.map((d) => ({ index: d.index, length: d.embedding.length, head: Array.from(d.embedding.slice(0, 3)) }));
    const defaults = await client.embeddings.create({ model: "openclaw", input: ["alpha beta", "gamma"] });
    const floats = await client.embeddings.create({ model: "openclaw", input: "alpha beta", encoding_format: "float" });
    return { defaults: first(defaults), floats: first(floats), model: defaults.model, wire };
  });
  emit({ step: "done", ok: true });
  process.exit(0);
}

await step("models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  const one = await client.models.retrieve("openclaw/default");
  return { ids, retrieved: one.id };
});

await step("chat", async () => {
  const c = await client.chat.completions.create({
    model: "openclaw/default",
    messages: [{ role: "user", content: "hello from the js client" }],
  });
  return { id: c.id, object: c.object, content: c.choices[0].message.content, finish: c.choices[0].finish_reason, usage: c.usage };
});

await step("chat.stream", async () => {
  const stream = await client.chat.completions.create({
    model: "openclaw",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "stream to js" }],
  });
  let content = "";
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta?.content) content += ch.delta.content;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { content, chunks, finish, usage };
});

await step("chat.user", async () => {
  const replies = [];
  for (const text of ["first js turn", "second js turn"]) {
    const c = await client.chat.completions.create({
      model: "openclaw",
      user: "js-conversation",
      messages: [{ role: "user", content: text }],
    });
    replies.push(c.choices[0].message.content);
  }
  return { replies };
});

const weatherTool = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};

await step("chat.tools", async () => {
  const messages = [{ role: "user", content: '/tool get_weather {"city":"Paris"}' }];
  const c = await client.chat.completions.create({ model: "openclaw", user: "js-tools", tools: [weatherTool], messages });
  const msg = c.choices[0].message;
  const call = msg.tool_calls?.[0];
  if (!call) throw new Error("no tool call in " + JSON.stringify(c));
  messages.push(msg, { role: "tool", tool_call_id: call.id, content: "sunny in Paris" });
  const next = await client.chat.completions.create({ model: "openclaw", user: "js-tools", tools: [weatherTool], messages });
  return {
    finish: c.choices[0].finish_reason, name: call.function.name, args: JSON.parse(call.function.arguments).city,
    followFinish: next.choices[0].finish_reason, followText: next.choices[0].message.content,
  };
});

await step("chat.tools.stream", async () => {
  const stream = await client.chat.completions.create({
    model: "openclaw", stream: true, tools: [weatherTool],
    messages: [{ role: "user", content: '/tool get_weather {"city":"Oslo"}' }],
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    for (const tc of ch.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: "", name: "", args: "" };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name += tc.function.name;
      if (tc.function?.arguments) calls[tc.index].args += tc.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { finish, count: calls.length, name: calls[0]?.name, city: JSON.parse(calls[0]?.args || "{}").city, hasId: !!calls[0]?.id };
});

let firstResponse;
await step("responses", async () => {
  const r = await client.responses.create({ model: "openclaw", input: "js response one" });
  firstResponse = r.id;
  return { id: r.id, status: r.status, text: r.output_text };
});

await step("responses.previous", async () => {
  const r = await client.responses.create({ model: "openclaw", input: "js response two", previous_response_id: firstResponse });
  return { id: r.id, status: r.status, text: r.output_text };
});

await step("responses.stream", async () => {
  const stream = await client.responses.create({ model: "openclaw", input: "js streamed response", stream: true });
  const types = [];
  let text = "";
  let final = "";
  for await (const ev of stream) {
    if (types[types.length - 1] !== ev.type) types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed") final = ev.response.output.map((o) => o.content?.map((c) => c.text).join("")).join("");
  }
  return { types, text, final };
});

await step("unknown-model", async () => {
  try {
    await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] });
  } catch (err) {
    return { status: err.status, message: err.error?.message ?? err.message, type: err.error?.type };
  }
  throw new Error("an unknown model was accepted");
});

emit({ step: "done", ok: true });
