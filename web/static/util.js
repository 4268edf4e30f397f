// Small helpers shared by the views: DOM building (text only, never innerHTML), formatting,
// the JSON fetch with the API's error envelope, and the hash route.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Unreachable extends Error {}

// GET a JSON endpoint; the error envelope becomes an ApiError, a network failure Unreachable.
export async function getJSON(path, params) {
  // Relative to the page, so the console also works behind a proxy under a path prefix.
  const url = new URL(path.replace(/^\//, ""), document.baseURI);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  let resp;
  try {
    // "no-cache": the browser asks again with If-None-Match and an unchanged answer is a 304.
    resp = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-cache" });
  } catch (e) {
    throw new Unreachable(`cannot reach the octel server (${e.message})`);
  }
  let body = null;
  try {
    body = await resp.json();
  } catch (e) {
    if (resp.ok) throw new ApiError(resp.status, "bad_response", "the server sent something other than JSON");
  }
  if (!resp.ok) {
    const err = body && body.error ? body.error : { code: "http_error", message: `HTTP ${resp.status}` };
    if (resp.status >= 502 && resp.status <= 504 && !(body && body.error)) {
      throw new Unreachable(`the octel server is not answering (HTTP ${resp.status})`);
    }
    throw new ApiError(resp.status, err.code, err.message);
  }
  return body;
}

// el("a.pill", {href: "#/x"}, "text", child) — children may be strings, nodes, arrays or null.
export function el(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const node = document.createElement(tag || "div");
  if (classes.length) node.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "style") node.style.cssText = v; // CSSOM, which the page's CSP allows
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else node.append(c instanceof Node ? c : String(c));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// One labelled figure of a page's head: fact("turns", "12", "a tooltip").
export function fact(k, v, title) {
  return el("div.fact", { title: title || null }, el("span.k", {}, k), el("span.v", {}, v));
}

// The one table builder: table("table.grid.turns", [["msg"], ["cost", "num"]], rows) where each
// head is [label, class, attributes] (class and attributes optional) and rows are <tr> nodes
// (or arrays of them); a caption, when given, comes first.
export function table(spec, head, rows, caption = null) {
  return el(
    spec,
    {},
    caption ? el("caption", {}, caption) : null,
    el("thead", {}, el("tr", {}, head.map(([h, cls, attrs]) => el(cls ? `th.${cls}` : "th", attrs || {}, h)))),
    el("tbody", {}, rows),
  );
}

// ---- formatting -------------------------------------------------------------------------

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 10) return `${Math.max(0, seconds).toFixed(1)}s`;
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function ago(iso, now) {
  if (!iso) return "–";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${duration(((now || Date.now()) - t) / 1000)} ago`;
}

export function when(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").slice(0, 19);
}

export function timeEl(iso) {
  return el("time", { datetime: iso || "", title: iso || "" }, when(iso));
}

// The one money format (the CLI's `money` is the same): cents from $1 up, four decimals below,
// so a sub-cent turn still shows what it cost.
export function usd(v) {
  if (v === null || v === undefined) return "–";
  if (v === 0) return "$0.00";
  const digits = Math.abs(v) < 1 ? 4 : 2;
  return `$${v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

// Token counts, each with its name: "in 2,555 · out 16 · reasoning 0 · cache read 0 · cache write 0".
export function tokenText(t) {
  if (!t) return "–";
  const parts = [["in", t.input], ["out", t.output], ["reasoning", t.reasoning], ["cache read", t.cache_read], ["cache write", t.cache_write]];
  return parts.map(([k, v]) => `${k} ${num(v || 0)}`).join(" · ");
}

export function num(v) {
  if (v === null || v === undefined) return "–";
  return Number(v).toLocaleString("en-US");
}

export function pct(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return `${(v * 100).toFixed(1)}%`;
}

export function pill(text, kind) {
  return el(`span.pill.${kind || text.replace(/[^a-z_]/gi, "_")}`, {}, text);
}

// Redaction placeholders the archiver writes ([REDACTED:<rule>:<hmac>]) are drawn as such.
const REDACTED = /\[REDACTED:([A-Za-z0-9_]+):([0-9a-f]+)\]/g;

export function redactedText(text) {
  const out = [];
  let last = 0;
  const s = String(text ?? "");
  for (const m of s.matchAll(REDACTED)) {
    if (m.index > last) out.push(s.slice(last, m.index));
    out.push(el("mark.redacted", { title: `redacted by rule ${m[1]} (fingerprint ${m[2]})` }, `redacted: ${m[1]}`));
    last = m.index + m[0].length;
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
}

// ---- the hash route: #/view/arg?k=v ------------------------------------------------------

export function parseHash(hash) {
  const raw = (hash || "").replace(/^#\/?/, "");
  const [path, query] = raw.split("?", 2);
  const segs = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { view: segs[0] || "overview", arg: segs.slice(1).join("/") || null, params: new URLSearchParams(query || "") };
}

export function hashFor(view, arg, params) {
  let h = `#/${view}`;
  if (arg) h += `/${encodeURIComponent(arg)}`;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "" && v !== false) q.set(k, v);
  }
  const qs = q.toString();
  return qs ? `${h}?${qs}` : h;
}

export function paramsObject(params) {
  const o = {};
  for (const [k, v] of params.entries()) o[k] = v;
  return o;
}

export function errorBox(err) {
  const msg = err instanceof ApiError ? `${err.message} (${err.code})` : err.message || String(err);
  return el("p.error", { role: "alert" }, msg);
}

// Rows of sessions in tree order: each session whose parent is among `items` right under it
// (depth-first, in the order given), the rest where they were. A child whose parent is not
// listed stays at depth 0 with `detached` set, so it never reads as a child of the row above.
export function treeOrder(items) {
  const byId = new Map(items.map((s) => [s.session_id, s]));
  const kids = new Map();
  const tops = [];
  for (const s of items) {
    const p = s.parent_session_id;
    if (p && p !== s.session_id && byId.has(p)) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(s);
    } else tops.push(s);
  }
  const out = [];
  const seen = new Set();
  const walk = (s, depth) => {
    if (seen.has(s.session_id)) return;
    seen.add(s.session_id);
    out.push({ s, depth, detached: depth === 0 && Boolean(s.parent_session_id) });
    for (const c of kids.get(s.session_id) || []) walk(c, depth + 1);
  };
  for (const t of tops) walk(t, 0);
  for (const s of items) walk(s, 0); // parent links that loop: still every row, once
  return out;
}

// The title cell's lead: arrows for a child under its parent, "subagent of …" for one whose
// parent is not in the list.
export function treeLead(row) {
  if (row.depth) return el("span.muted", { title: `subagent at depth ${row.depth}` }, `${"↳".repeat(Math.min(row.depth, 3))} `);
  if (!row.detached) return null;
  const root = row.s.root_session_id || row.s.parent_session_id;
  return el("span.muted.detached", {}, "subagent of ", el("a", { href: `#/session/${encodeURIComponent(root)}` }, root), " · ");
}
