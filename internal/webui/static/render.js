// Safe rendering: model and user text only ever becomes text nodes. The
// small Markdown subset (fenced code, inline code, bold, italics, links to
// http(s) URLs, paragraphs) is built from DOM nodes, never from HTML
// strings, so a reply containing markup shows as text.

// el creates an element with properties (dataset merged) and children
// (strings become text nodes).
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== "" && c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const inlineRe = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\(https?:\/\/[^\s)]+\))/;

function inline(text) {
  const out = document.createDocumentFragment();
  let rest = text;
  while (rest) {
    const m = inlineRe.exec(rest);
    if (!m) { out.append(document.createTextNode(rest)); break; }
    if (m.index > 0) out.append(document.createTextNode(rest.slice(0, m.index)));
    const tok = m[0];
    if (m[1]) out.append(el("code", {}, tok.slice(1, -1)));
    else if (m[2]) out.append(el("strong", {}, tok.slice(2, -2)));
    else if (m[3]) out.append(el("em", {}, tok.slice(1, -1)));
    else {
      const close = tok.indexOf("](");
      const href = tok.slice(close + 2, -1);
      out.append(el("a", { href, target: "_blank", rel: "noopener noreferrer" }, tok.slice(1, close)));
    }
    rest = rest.slice(m.index + tok.length);
  }
  return out;
}

// renderMarkdown returns a fragment for text.
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const parts = String(text ?? "").split(/```/);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const nl = part.indexOf("\n");
      frag.append(el("pre", {}, el("code", {}, nl >= 0 ? part.slice(nl + 1) : part)));
      return;
    }
    for (const para of part.split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const p = el("p");
      para.split("\n").forEach((line, j) => {
        if (j > 0) p.append(el("br"));
        p.append(inline(line));
      });
      frag.append(p);
    }
  });
  return frag;
}

export function fmtTime(ms) {
  if (!ms) return "";
  return new Date(ms).toLocaleString();
}

export function fmtTokens(n) {
  if (!n) return "0";
  return n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n);
}
