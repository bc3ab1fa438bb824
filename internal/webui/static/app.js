// Switchboard's browser UI: one WebSocket to the gateway, speaking its
// protocol as a control UI. No framework, no build step; model output is
// only ever placed in the page as text nodes (see render.js).
import { renderMarkdown, el, fmtTime, fmtTokens } from "/ui/render.js";

const $ = (id) => document.getElementById(id);
const state = {
  token: "",
  ws: null,
  nextId: 1,
  pending: new Map(), // request id → {resolve, reject}
  hello: null,
  connectedAt: 0,
  retry: 0,
  key: "main", // the chat view's session (as typed)
  canonical: "", // its canonical key once known
  runs: new Map(), // runId → bubble element of a streaming reply
  activeRun: "",
  waits: new Set(), // runIds to re-attach agent.wait to after a reconnect
  inputs: new Map(), // runId → user bubble of input not yet running (queued)
  chatGen: 0, // openChat calls, newest wins
  chatLoading: false, // chat.history on its way
  chatStale: false, // a run started or ended meanwhile
  sessionsOffset: 0,
  treeTimer: 0,
  approvals: new Map(), // approval id → exec.approval.requested payload
};
const PAGE = 50;

// ---- auth --------------------------------------------------------------

function loadToken() {
  const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
  if (m) {
    const t = decodeURIComponent(m[1]);
    history.replaceState(null, "", location.pathname + location.search); // keep it out of the address bar
    sessionStorage.setItem("switchboard.token", t);
    return t;
  }
  return sessionStorage.getItem("switchboard.token") || localStorage.getItem("switchboard.token") || "";
}

function showLogin(message) {
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

$("login-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const t = $("login-token").value.trim();
  if (!t) return;
  sessionStorage.setItem("switchboard.token", t);
  if ($("login-remember").checked) localStorage.setItem("switchboard.token", t);
  else localStorage.removeItem("switchboard.token");
  state.token = t;
  connect();
});

// ---- protocol ------------------------------------------------------------

function setStatus(text, cls) {
  const s = $("status");
  s.textContent = text;
  s.className = "status " + cls;
}

function connect() {
  if (state.ws) state.ws.close();
  setStatus("connecting…", "wait");
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/");
  state.ws = ws;
  ws.onmessage = (m) => onFrame(ws, JSON.parse(m.data));
  ws.onclose = (e) => {
    if (state.ws !== ws) return;
    for (const p of state.pending.values()) p.reject(new Error("connection closed"));
    state.pending.clear();
    if (e.code === 4001 || e.code === 1008) {
      setStatus("unauthorized", "off");
      return showLogin("The gateway refused the token.");
    }
    const delay = Math.min(10000, 250 * 2 ** state.retry++);
    setStatus(`disconnected — retrying in ${Math.round(delay / 1000)}s`, "off");
    setTimeout(() => { if (state.ws === ws) connect(); }, delay);
  };
}

function onFrame(ws, f) {
  if (f.type === "event" && f.event === "connect.challenge") {
    request("connect", {
      minProtocol: 3, maxProtocol: 4,
      client: { id: "webchat-ui", version: "switchboard-ui", platform: "web", mode: "ui" },
      role: "operator",
      scopes: ["operator.read", "operator.write", "operator.admin"],
      // The UI answers exec approvals: runs wait for it to decide.
      caps: ["exec-approvals"],
      auth: { token: state.token },
    }, ws).then(onHello, (err) => {
      setStatus("refused", "off");
      ws.close();
      showLogin(err.message);
    });
    return;
  }
  if (f.type === "res") {
    const p = state.pending.get(f.id);
    if (!p) return;
    state.pending.delete(f.id);
    if (f.ok) p.resolve(f.payload);
    else p.reject(Object.assign(new Error(f.error?.message || "request failed"), { code: f.error?.code }));
    return;
  }
  if (f.type === "event") onEvent(f.event, f.payload || {});
}

function request(method, params, ws = state.ws) {
  return new Promise((resolve, reject) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return reject(new Error("not connected"));
    const id = "ui-" + state.nextId++;
    state.pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ type: "req", id, method, params }));
  });
}

function onHello(hello) {
  state.hello = hello;
  state.retry = 0;
  state.connectedAt = Date.now() - (hello.snapshot?.uptimeMs || 0);
  setStatus("connected", "on");
  $("login").hidden = true;
  $("app").hidden = false;
  $("version").textContent = "gateway " + (hello.server?.version || "?");
  openChat(state.key);
  refreshSessions();
  refreshApprovals();
  request("agents.list", {}).then((r) => fillAgentFilter(r.agents || [])).catch(() => {});
  // Re-attach waits on runs that were streaming when the link dropped.
  for (const runId of state.waits) waitRun(runId);
}

setInterval(() => {
  if (!state.connectedAt) return;
  const s = Math.floor((Date.now() - state.connectedAt) / 1000);
  $("uptime").textContent = `up ${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}, 1000);

// ---- events --------------------------------------------------------------

function onEvent(name, p) {
  if (name === "chat") return onChat(p);
  if (name === "exec.approval.requested") { state.approvals.set(p.id, p); return renderApprovals(); }
  if (name === "exec.approval.resolved") { state.approvals.delete(p.id); return renderApprovals(); }
  if (name === "agent") {
    if (p.stream === "tool" && (p.sessionKey === state.canonical)) onTool(p);
    if (p.stream === "lifecycle" && (p.sessionKey === state.canonical)) onLifecycle(p);
    if (p.stream === "lifecycle" && !$("view-tree").hidden) scheduleTree();
    // A run that ended (aborted, timed out) no longer waits on its approvals.
    if (p.stream === "lifecycle" && ["end", "error"].includes(p.data?.phase)) dropRunApprovals(p.runId);
  }
}

function onChat(p) {
  if (state.chatLoading && p.state !== "delta") state.chatStale = true;
  if (p.sessionKey !== state.canonical) {
    if (!$("view-tree").hidden) scheduleTree();
    return;
  }
  let bubble = state.runs.get(p.runId);
  if (!bubble) {
    bubble = addMessage("assistant", "", fmtTime(p.message?.timestamp || Date.now()), { streaming: true });
    state.runs.set(p.runId, bubble);
  }
  if (bubble.classList.contains("thinking")) {
    // The first token (or the end): no longer only thinking.
    bubble.classList.remove("thinking");
    bubble.querySelector(".who").textContent = "assistant · " + fmtTime(p.message?.timestamp || Date.now());
  }
  const text = messageText(p.message) || (p.state === "delta" ? (bubble.dataset.raw || "") + (p.deltaText || "") : "");
  bubble.dataset.raw = text;
  setBody(bubble, text);
  if (p.state === "delta") {
    state.activeRun = p.runId;
    $("chat-run").textContent = "replying…";
    return;
  }
  bubble.classList.remove("streaming");
  if (p.state === "error") {
    bubble.classList.add("error");
    setBody(bubble, (text ? text + "\n\n" : "") + "⚠ " + (p.errorMessage || p.errorKind || "run failed"));
  }
  if (p.state === "aborted") {
    bubble.classList.add("aborted");
    setBody(bubble, (text ? text + "\n\n" : "") + "⏹ aborted");
  }
  state.runs.delete(p.runId);
  state.waits.delete(p.runId);
  if (state.activeRun === p.runId) { state.activeRun = ""; $("chat-run").textContent = ""; }
}

// onLifecycle tracks input waiting for the session: a "queued" event (from
// this page or any other client) shows it as pending with its place in the
// queue; once its run starts it is an ordinary message; a run that ends
// without having started was cancelled.
function onLifecycle(p) {
  const d = p.data || {};
  if (state.chatLoading && (d.phase === "start" || d.phase === "end")) state.chatStale = true;
  let bubble = state.inputs.get(p.runId);
  if (d.phase === "queued") {
    if (!bubble) {
      bubble = addMessage("user", d.message || "");
      state.inputs.set(p.runId, bubble);
    }
    markInput(bubble, "queued", `queued #${d.position} · ${d.queueMode}`);
    return;
  }
  if (!bubble) return;
  if (d.phase === "start") markInput(bubble, "", "");
  else if (d.phase === "end") markInput(bubble, "cancelled", "cancelled");
  else return;
  state.inputs.delete(p.runId);
}

function markInput(bubble, cls, note) {
  bubble.classList.remove("queued", "cancelled");
  if (cls) bubble.classList.add(cls);
  const meta = bubble.dataset.meta; // the time it was sent
  bubble.querySelector(".who").textContent = "user" + (meta ? " · " + meta : "") + (note ? " · " + note : "");
}

function onTool(p) {
  const d = p.data || {};
  if (d.phase !== "start") return;
  const box = el("details", { className: "tool" }, el("summary", {}, "tool " + (d.name || "")));
  box.append(el("pre", {}, JSON.stringify(d.args ?? {}, null, 2)));
  $("messages").append(box);
  scrollDown();
}

// ---- chat ----------------------------------------------------------------

function messageText(msg) {
  if (!msg) return "";
  if (typeof msg.content === "string") return msg.content;
  return (msg.content || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

function setBody(bubble, text) {
  const body = bubble.querySelector(".body");
  body.replaceChildren(renderMarkdown(text));
}

// addMessage appends a message bubble; only the bubble of a live run's
// reply is marked streaming (opts.streaming).
function addMessage(role, text, meta, opts = {}) {
  const bubble = el("div", { className: "msg " + role + (opts.streaming ? " streaming" : "") });
  bubble.append(el("div", { className: "who" }, role + (meta ? " · " + meta : "")), el("div", { className: "body" }));
  bubble.dataset.raw = text;
  if (meta) bubble.dataset.meta = meta;
  setBody(bubble, text);
  $("messages").append(bubble);
  scrollDown();
  return bubble;
}

function scrollDown() {
  const m = $("messages");
  m.scrollTop = m.scrollHeight;
}

// historyText is what a stored message shows: its text, or for an
// assistant message that only called tools, which tools; "aborted" for a
// reply cut short.
function historyText(m) {
  let text = messageText(m);
  if (m.role === "assistant" && !text.trim() && Array.isArray(m.content)) {
    const tools = m.content.filter((b) => b.type === "toolCall" || b.type === "tool_use").map((b) => b.name);
    if (tools.length) text = "_called " + tools.join(", ") + "_";
  }
  if (m.role === "assistant" && m.stopReason === "aborted") text = (text ? text + "\n\n" : "") + "⏹ aborted";
  return text;
}

async function openChat(key) {
  const next = key.trim() || "main";
  if (next !== state.key) {
    // Another session: nothing of this one's live state carries over.
    $("messages").replaceChildren();
    state.runs.clear();
    state.inputs.clear();
  }
  state.key = next;
  $("chat-key").value = state.key;
  const gen = ++state.chatGen;
  state.chatLoading = true;
  state.chatStale = false;
  let h;
  try {
    h = await request("chat.history", { sessionKey: state.key, limit: 200 });
  } catch (err) {
    if (gen === state.chatGen) {
      state.chatLoading = false;
      addMessage("system", "Cannot read the session: " + err.message);
    }
    return;
  }
  if (gen !== state.chatGen) return; // a newer openChat owns the view
  // What this page shows live (a message not yet running, a reply
  // streaming) stays after the history it is not part of yet.
  const live = new Set([...state.runs.values(), ...state.inputs.values()]);
  const keep = [...$("messages").children].filter((n) => live.has(n));
  $("messages").replaceChildren();
  state.canonical = h.sessionKey;
  $("tree-root").textContent = h.sessionKey;
  for (const m of h.messages || []) {
    const kind = m.__openclaw?.kind;
    if (kind) { $("messages").append(el("div", { className: "boundary" }, "— " + messageText(m) + " —")); continue; }
    if (m.role === "user" || m.role === "assistant") addMessage(m.role, historyText(m), fmtTime(m.timestamp));
  }
  const pend = h.pendingInputs?.items || [];
  for (const it of pend) {
    if (state.inputs.has(it.runId)) continue; // shown live already
    const b = addMessage("user", typeof it.message === "string" ? it.message : JSON.stringify(it.message));
    markInput(b, it.state, it.state);
    if (it.state === "queued") state.inputs.set(it.runId, b);
  }
  for (const n of keep) $("messages").append(n);
  scrollDown();
  state.chatLoading = false;
  request("sessions.messages.subscribe", { key: state.canonical }).catch(() => {});
  // A run started or ended while the history was on its way: read it
  // again, so that nothing in between is missing.
  if (state.chatStale) {
    state.chatStale = false;
    openChat(state.key);
  }
}

function waitRun(runId) {
  state.waits.add(runId);
  request("agent.wait", { runId, timeoutMs: 600000 }).then((res) => {
    state.waits.delete(runId);
    // A send that ended with no reply event at all: no longer thinking;
    // aborted before its first token, it says so.
    const b = state.runs.get(runId);
    if (b && b.classList.contains("thinking") && !b.dataset.raw) {
      state.runs.delete(runId);
      if (!state.activeRun) $("chat-run").textContent = "";
      if (res?.error !== "aborted") return b.remove();
      b.classList.remove("thinking", "streaming");
      b.classList.add("aborted");
      b.querySelector(".who").textContent = "assistant · " + fmtTime(Date.now());
      setBody(b, "⏹ aborted");
    }
  }, () => {});
}

async function send() {
  const text = $("input").value;
  if (!text.trim()) return;
  $("input").value = "";
  const bubble = addMessage("user", text, fmtTime(Date.now()));
  const runId = crypto.randomUUID();
  state.inputs.set(runId, bubble); // until its run starts (or it waits: queued)
  // Until the first token: the agent is working on it.
  const reply = addMessage("assistant", "", "thinking…", { streaming: true });
  reply.classList.add("thinking");
  state.runs.set(runId, reply);
  $("chat-run").textContent = "thinking…";
  try {
    const ack = await request("chat.send", { sessionKey: state.key, message: text, idempotencyKey: runId });
    if (!state.canonical) state.canonical = state.key;
    waitRun(ack.runId || runId);
  } catch (err) {
    state.inputs.delete(runId);
    state.runs.delete(runId);
    reply.remove();
    $("chat-run").textContent = "";
    addMessage("system", "Not sent: " + err.message);
  }
}

async function abort() {
  try {
    await request("chat.abort", { sessionKey: state.key });
  } catch (err) {
    addMessage("system", "Abort failed: " + err.message);
  }
}

$("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
document.addEventListener("keydown", (e) => { if (e.key === "Escape") abort(); });
$("abort").addEventListener("click", abort);
$("inject").addEventListener("click", async () => {
  const text = $("input").value.trim();
  if (!text) return;
  $("input").value = "";
  try {
    await request("chat.inject", { sessionKey: state.key, message: text, label: "note" });
    addMessage("assistant", text, "note");
  } catch (err) {
    addMessage("system", "Note not added: " + err.message);
  }
});
$("chat-open").addEventListener("click", () => openChat($("chat-key").value));
$("chat-key").addEventListener("keydown", (e) => { if (e.key === "Enter") openChat($("chat-key").value); });

// ---- sessions --------------------------------------------------------------

// budgetBadge shows a budgeted tree's use against its limits (red when
// spent; the reason in the tooltip).
function budgetBadge(b) {
  if (!b || !b.limits) return "";
  const l = b.limits, u = b.used || {};
  const parts = [];
  if (l.maxTokens) parts.push(`${fmtTokens(u.tokens || 0)}/${fmtTokens(l.maxTokens)} tok`);
  if (l.maxCost) parts.push(`$${(u.cost || 0).toFixed(2)}/$${l.maxCost}`);
  if (l.maxRuns) parts.push(`${u.runs || 0}/${l.maxRuns} runs`);
  if (!parts.length) parts.push("budget");
  const badge = el("span", { className: "badge " + (b.exhausted ? "error" : "pending"), title: b.exhausted || "budget" }, parts.join(" · "));
  return badge;
}

async function refreshSessions() {
  const params = { limit: PAGE, offset: state.sessionsOffset };
  const q = $("sessions-search").value.trim();
  if (q) params.search = q;
  const agentId = $("sessions-agent").value;
  if (agentId) params.agentId = agentId;
  const label = $("sessions-label").value.trim();
  if (label) params.label = label;
  let res;
  try {
    res = await request("sessions.list", params);
  } catch (err) {
    $("sessions-page").textContent = err.message;
    return;
  }
  const kind = $("sessions-kind").value;
  const def = defaultModel(res.defaults);
  const body = $("sessions-table").tBodies[0];
  body.replaceChildren();
  const keys = $("session-keys");
  keys.replaceChildren();
  for (const s of res.sessions || []) {
    keys.append(el("option", { value: s.key }));
    if (kind && s.kind !== kind) continue;
    const open = el("button", {}, "Open");
    open.addEventListener("click", () => { showView("chat"); openChat(s.key); });
    const reset = el("button", {}, "Reset");
    reset.addEventListener("click", async () => { await request("sessions.reset", { key: s.key }); refreshSessions(); });
    const edit = el("button", { className: "edit" }, "Edit");
    edit.addEventListener("click", () => editSession(s));
    const exp = el("button", { className: "export" }, "Export");
    exp.addEventListener("click", async () => {
      try {
        const r = await request("sessions.export", { key: s.key });
        $("sessions-note").textContent = `${s.key} exported to ${r.path}`;
      } catch (err) {
        $("sessions-note").textContent = `Export of ${s.key} failed: ${err.message}`;
      }
    });
    const del = el("button", {}, "Delete");
    del.addEventListener("click", async () => {
      if (confirm("Delete " + s.key + "?")) { await request("sessions.delete", { key: s.key }); refreshSessions(); }
    });
    body.append(el("tr", {},
      el("td", {}, el("code", {}, s.key), s.label ? el("span", { className: "label" }, s.label) : ""),
      el("td", {}, s.agentId || ""), el("td", {}, s.kind || ""),
      el("td", {}, s.model ? (s.modelProvider && !s.model.includes("/") ? s.modelProvider + "/" : "") + s.model : def ? def + " (default)" : ""),
      el("td", {}, fmtTokens(s.totalTokens), budgetBadge(s.budget)), el("td", {}, fmtTime(s.updatedAt)),
      el("td", { className: "row-actions" }, open, edit, exp, reset, del)));
  }
  const shown = (res.sessions || []).length;
  $("sessions-page").textContent = `${state.sessionsOffset + 1}–${state.sessionsOffset + shown}${res.count ? " of " + res.count : ""}`;
  $("sessions-next").disabled = !res.hasMore && shown < PAGE;
  $("sessions-prev").disabled = state.sessionsOffset === 0;
}
$("sessions-refresh").addEventListener("click", refreshSessions);
$("sessions-agent").addEventListener("change", () => { state.sessionsOffset = 0; refreshSessions(); });
$("sessions-label").addEventListener("change", () => { state.sessionsOffset = 0; refreshSessions(); });

// editSession opens the editor of one session's label, model and send
// policy (sessions.patch; an empty field clears the override).
function editSession(s) {
  state.editing = s.key;
  $("edit-key").textContent = s.key;
  $("edit-label").value = s.label || "";
  $("edit-model").value = s.model || "";
  $("edit-send").value = s.sendPolicy || "";
  $("edit-status").textContent = "";
  $("session-edit").hidden = false;
  $("edit-label").focus();
}
$("edit-cancel").addEventListener("click", () => { $("session-edit").hidden = true; });
$("session-edit").addEventListener("submit", async (e) => {
  e.preventDefault();
  const orNull = (v) => (v.trim() === "" ? null : v.trim());
  try {
    await request("sessions.patch", {
      key: state.editing, label: orNull($("edit-label").value), model: orNull($("edit-model").value),
      sendPolicy: orNull($("edit-send").value),
    });
    $("session-edit").hidden = true;
    $("sessions-note").textContent = `${state.editing} saved`;
    refreshSessions();
  } catch (err) {
    $("edit-status").textContent = err.message; // the gateway's reason; nothing changed
  }
});
$("sessions-search").addEventListener("input", () => { state.sessionsOffset = 0; refreshSessions(); });
$("sessions-kind").addEventListener("change", refreshSessions);
$("sessions-next").addEventListener("click", () => { state.sessionsOffset += PAGE; refreshSessions(); });
$("sessions-prev").addEventListener("click", () => { state.sessionsOffset = Math.max(0, state.sessionsOffset - PAGE); refreshSessions(); });

// ---- the switchboard view: a session's family --------------------------------

function scheduleTree() {
  clearTimeout(state.treeTimer);
  state.treeTimer = setTimeout(refreshTree, 150); // coalesce bursts of events
}

async function refreshTree() {
  const root = state.canonical || "agent:main:main";
  $("tree-root").textContent = root;
  let subs = [], anns = [];
  try {
    [subs, anns] = await Promise.all([
      request("subagents.list", { limit: 1000 }).then((r) => r.subagents || []),
      request("announces.list", { status: "all", limit: 200 }).then((r) => r.announces || []),
    ]);
  } catch (err) {
    $("tree").replaceChildren(el("li", { className: "error" }, err.message));
    return;
  }
  const children = new Map();
  for (const s of subs) {
    if (!children.has(s.requesterKey)) children.set(s.requesterKey, []);
    children.get(s.requesterKey).push(s);
  }
  const node = (key, info) => {
    const status = info ? (info.archived ? "archived" : info.runStatus || "queued") : "root";
    const li = el("li", { className: "node " + status, dataset: { key } });
    const link = el("a", { href: "#" }, key);
    link.addEventListener("click", (e) => { e.preventDefault(); showView("chat"); openChat(key); });
    li.append(el("span", { className: "badge " + status }, status), " ", link);
    if (info?.label) li.append(" ", el("span", { className: "label" }, info.label));
    if (info?.task) li.append(el("div", { className: "task" }, info.task));
    if (info?.announceStatus) li.append(el("div", { className: "announce " + info.announceStatus }, "announce " + info.announceStatus));
    const kids = children.get(key) || [];
    if (kids.length) {
      const ul = el("ul");
      for (const k of kids) ul.append(node(k.childSessionKey, k));
      li.append(ul);
    }
    return li;
  };
  $("tree").replaceChildren(node(root, null));
  refreshEdges([root, ...subs.map((s) => s.childSessionKey)]);
  const body = $("announces").tBodies[0];
  body.replaceChildren();
  for (const a of anns) {
    const redo = el("button", {}, "Redeliver");
    redo.disabled = a.status !== "dead";
    redo.addEventListener("click", async () => { await request("announces.redeliver", { id: a.id }); refreshTree(); });
    body.append(el("tr", {}, el("td", {}, el("span", { className: "badge " + a.status }, a.status)),
      el("td", {}, el("code", {}, a.sessionKey)), el("td", {}, el("code", {}, a.runId)),
      el("td", {}, String(a.attempts)), el("td", {}, a.lastError || ""), el("td", {}, redo)));
  }
}
$("tree-refresh").addEventListener("click", refreshTree);

// refreshEdges lists the messages that reached the family's sessions from
// other sessions (sessions_send, reply-back steps, announces) with their
// delivery status: queued, delivered, replied or failed.
async function refreshEdges(keys) {
  const body = $("edges").tBodies[0];
  let edges;
  try {
    edges = (await request("sessions.edges", { keys: keys.slice(0, 2000), limit: 200 })).edges || [];
  } catch (err) {
    body.replaceChildren(el("tr", {}, el("td", { colSpan: 5, className: "error" }, err.message)));
    return;
  }
  body.replaceChildren(...edges.map((e) => el("tr", { dataset: { run: e.runId } },
    el("td", {}, el("span", { className: "badge " + e.status, title: e.error || "" }, e.status)),
    el("td", {}, el("code", {}, e.from)), el("td", {}, el("code", {}, e.to)),
    el("td", {}, e.via || ""), el("td", {}, fmtTime(e.createdAt)))));
}

// ---- exec approvals -----------------------------------------------------------

async function refreshApprovals() {
  try {
    const res = await request("exec.approval.list", {});
    state.approvals = new Map((Array.isArray(res) ? res : []).map((a) => [a.id, a]));
  } catch {
    state.approvals = new Map();
  }
  renderApprovals();
}

function dropRunApprovals(runId) {
  let changed = false;
  for (const [id, a] of state.approvals) {
    if (runId && a.request?.runId === runId) { state.approvals.delete(id); changed = true; }
  }
  if (changed) renderApprovals();
}

const decisionLabels = { "allow-once": "Allow once", "allow-always": "Allow always", "deny": "Deny" };

function renderApprovals() {
  const now = Date.now();
  for (const [id, a] of state.approvals) if (a.expiresAtMs && a.expiresAtMs <= now) state.approvals.delete(id);
  const items = [...state.approvals.values()].map((a) => {
    const r = a.request || {};
    const li = el("li", { className: "approval", dataset: { id: a.id } });
    const left = Math.max(0, Math.round(((a.expiresAtMs || now) - now) / 1000));
    li.append(el("pre", { className: "command" }, r.command || ""),
      el("div", { className: "muted" }, (r.sessionKey || r.agentId || "") + (r.cwd ? " · " + r.cwd : ""),
        el("span", { className: "expires" }, ` · expires in ${Math.floor(left / 60)}m ${left % 60}s`)));
    const buttons = el("div", { className: "actions" });
    for (const d of r.allowedDecisions || ["allow-once", "deny"]) {
      const b = el("button", { className: "decision " + d, dataset: { decision: d } }, decisionLabels[d] || d);
      b.addEventListener("click", async () => {
        for (const x of buttons.children) x.disabled = true;
        try {
          await request("exec.approval.resolve", { id: a.id, decision: d });
          state.approvals.delete(a.id);
        } catch (err) {
          li.append(el("div", { className: "error" }, err.message));
          state.approvals.delete(a.id);
          setTimeout(renderApprovals, 3000);
          return;
        }
        renderApprovals();
      });
      buttons.append(b);
    }
    li.append(buttons);
    return li;
  });
  $("approvals-list").replaceChildren(...items);
  $("approvals").hidden = items.length === 0;
}
// Tick the countdowns in place (rebuilding would swap buttons under a
// click); expired approvals are dropped.
setInterval(() => {
  if (!state.approvals.size) return;
  const now = Date.now();
  if ([...state.approvals.values()].some((a) => a.expiresAtMs && a.expiresAtMs <= now)) return renderApprovals();
  for (const li of document.querySelectorAll("#approvals-list .approval")) {
    const a = state.approvals.get(li.dataset.id);
    const left = Math.max(0, Math.round(((a?.expiresAtMs || now) - now) / 1000));
    const span = li.querySelector(".expires");
    if (span) span.textContent = ` · expires in ${Math.floor(left / 60)}m ${left % 60}s`;
  }
}, 1000);

// ---- agents ----------------------------------------------------------------

// defaultModel is "provider/model" of sessions.list's defaults ("" when
// it names none).
function defaultModel(d) {
  if (!d || !d.model) return "";
  return d.modelProvider && !d.model.includes("/") ? d.modelProvider + "/" + d.model : d.model;
}

async function refreshAgents() {
  try {
    const [res, def] = await Promise.all([request("agents.list", {}),
      request("sessions.list", { limit: 1 }).then((r) => defaultModel(r.defaults), () => "")]);
    const agents = res.agents || [];
    fillAgentFilter(agents);
    const cards = agents.map((a) => {
      const recent = el("ul", { className: "recent" });
      const card = el("li", { className: "card", dataset: { agent: a.id } },
        el("h3", {}, a.id + (a.id === res.defaultId ? " (default)" : "")),
        el("div", {}, "model: ", el("code", {}, a.model?.primary || def || "—"), a.model?.primary || !def ? "" : " (default)"),
        el("div", {}, "workspace: ", el("code", {}, a.workspace || "—")),
        el("div", {}, "recent sessions:"), recent);
      // Each agent's five most recently updated sessions, opened on click.
      request("sessions.list", { agentId: a.id, limit: 5 }).then((r) => {
        const rows = r.sessions || [];
        if (!rows.length) recent.append(el("li", {}, "none yet"));
        for (const s of rows) {
          const link = el("a", { href: "#" }, s.key);
          link.addEventListener("click", (e) => { e.preventDefault(); showView("chat"); openChat(s.key); });
          recent.append(el("li", {}, link, " ", el("span", { className: "muted" }, fmtTime(s.updatedAt))));
        }
      }).catch((err) => recent.append(el("li", { className: "error" }, err.message)));
      return card;
    });
    $("agents").replaceChildren(...cards);
  } catch (err) {
    $("agents").replaceChildren(el("li", { className: "error" }, err.message));
  }
}

// fillAgentFilter lists the agents in the sessions view's agent filter,
// keeping the current choice.
function fillAgentFilter(agents) {
  const sel = $("sessions-agent");
  const cur = sel.value;
  sel.replaceChildren(el("option", { value: "" }, "all agents"), ...agents.map((a) => el("option", { value: a.id }, a.id)));
  sel.value = agents.some((a) => a.id === cur) ? cur : "";
}

// ---- views -----------------------------------------------------------------

function showView(name) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.view === name);
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + name;
  if (name === "sessions") refreshSessions();
  if (name === "tree") refreshTree();
  if (name === "agents") refreshAgents();
}
for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showView(b.dataset.view));

state.token = loadToken();
if (state.token) connect();
else showLogin("");
