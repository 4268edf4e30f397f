// The message timeline of one archived session: tool calls folded, reasoning folded,
// redactions drawn as such, every part addressable (id "p-<part id>") for findings to link to.

import { clear, duration, el, pill, redactedText, timeEl, tokenText, usd } from "./util.js";

// `waitingAsk`: the live session waits on a permission ask, so its tool call in flight is
// waiting on that ask, not running.
export function drawTimeline(node, page, onPage, { waitingAsk = false } = {}) {
  if (!page.items.length) {
    clear(node, el("p.muted", {}, "This archive holds no messages."));
    return;
  }
  // Two pagers, above and below the messages: each landmark has its own name.
  const nav = (where) =>
    el(
      "nav.pager",
      { "aria-label": `Timeline pages (${where})` },
      el("button", { type: "button", disabled: page.offset === 0, onclick: () => onPage(0) }, "⇤ First"),
      el("button", { type: "button", disabled: page.prev_offset === null, onclick: () => onPage(page.prev_offset) }, "← Earlier"),
      el("span.muted", {}, `messages ${page.offset + 1}–${page.offset + page.items.length} of ${page.total}`),
      el("button", { type: "button", disabled: page.next_offset === null, onclick: () => onPage(page.next_offset) }, "Later →"),
    );
  clear(node, nav("top"), el("div.timeline", {}, page.items.map((m) => message(m, waitingAsk))), nav("bottom"));
}

function message(m, waitingAsk) {
  const head = el(
    "div.msg-head",
    {},
    el("span.role", {}, m.role || "message"),
    el("span", {}, `message ${m.index + 1}`),
    m.agent ? el("span", {}, `@${m.agent}`) : null,
    m.created_at ? timeEl(m.created_at) : null,
    m.duration_s !== null && m.duration_s !== undefined ? el("span", {}, duration(m.duration_s)) : null,
    m.in_flight ? pill("in flight", "inflight") : null,
    m.tokens ? el("span.tokens", {}, `tokens: ${tokenText(m.tokens)}`) : null,
    m.cost_usd ? el("span", {}, usd(m.cost_usd)) : null,
    m.finish ? el("span", {}, `finish: ${m.finish}`) : null,
    el("code.muted", {}, m.id || ""),
  );
  return el(
    `article.msg.${m.role === "user" ? "user" : "assistant"}${m.in_flight ? ".inflight" : ""}`,
    { id: m.id ? `m-${m.id}` : null },
    head,
    m.error ? el("p.error", {}, ...redactedText(m.error)) : null,
    (m.parts || []).map((p) => part(p, waitingAsk)),
  );
}

function part(p, waitingAsk) {
  const id = p.id ? `p-${p.id}` : null;
  switch (p.type) {
    case "text":
      return el("div.part.text", { id }, redactedText(p.text));
    case "reasoning":
      return el("details.part.reasoning", { id }, el("summary", {}, "reasoning"), el("pre", {}, redactedText(p.text)));
    case "thinking": // Claude Code
      return el("details.part.reasoning", { id }, el("summary", {}, "thinking"), el("pre", {}, redactedText(p.thinking || "")));
    case "tool":
      return tool(p, id, waitingAsk);
    case "step-start":
      return el("span.part.step", { id, hidden: true });
    case "step-finish":
      return el("div.part.step", { id }, `step finished: ${p.reason || "?"}`);
    case "patch":
      return el("div.part.step", { id }, `patch: ${(p.files || []).length} file(s)`);
    case "subtask":
    case "agent":
      return el("div.part.step", { id }, `${p.type}: ${p.agent || p.name || ""} ${p.description || ""}`);
    case "retry":
      return el("div.part.step.warn", { id }, `retry ${p.attempt ?? ""}: `, ...redactedText(p.error && (p.error.data?.message || p.error.name) ? p.error.data?.message || p.error.name : ""));
    case "compaction":
      return el("div.part.step.warn", { id }, "context compacted");
    case "file":
      return el("div.part.step", { id }, "file: ", ...redactedText(p.filename || p.url || ""));
    default: // also Claude Code's tool_use and tool_result blocks, and its system lines
      return el("details.part.tool", { id }, el("summary", {}, [p.type || "part", p.name || p.subtype].filter(Boolean).join(": ")), el("pre", {}, redactedText(JSON.stringify(p, null, 2))));
  }
}

function tool(p, id, waitingAsk) {
  const st = p.state || {};
  const status = st.status || "?";
  const t = st.time || {};
  const secs = t.start && t.end ? (t.end - t.start) / 1000 : null;
  const title = st.title || summarise(st.input);
  const body = [];
  if (st.input !== undefined) body.push(el("h4", {}, "input"), el("pre", {}, redactedText(typeof st.input === "string" ? st.input : JSON.stringify(st.input, null, 2))));
  if (st.output !== undefined && st.output !== null) body.push(el("h4", {}, "output"), el("pre", {}, redactedText(String(st.output))));
  if (st.error) body.push(el("h4", {}, "error"), el("pre.error", {}, redactedText(String(st.error))));
  const child = st.metadata && st.metadata.sessionId;
  // The link sits beside the summary, not in it: a link inside a <summary> is a control
  // inside a control (axe-core: nested-interactive), and a click on it also toggled the part.
  const childLink = p.tool === "task" && typeof child === "string"
    ? el("p.subagent-link", {}, el("a", { href: `#/session/${encodeURIComponent(child)}` }, "open subagent →"))
    : null;
  const part = el(
    `details.part.tool${status === "error" ? ".error" : ""}`,
    { id, dataset: { tool: p.tool || "" } },
    el(
      "summary",
      {},
      el("strong", {}, p.tool || "tool"),
      title ? [" ", el("span", {}, ...redactedText(title))] : null,
      " · ",
      status === "running" || status === "pending"
        ? waitingAsk
          ? el("span.pill.waiting-ask", { dataset: { status } }, "waiting on ask")
          : pill(status, "inflight")
        : el("span", { class: status === "error" ? "error" : "muted" }, status),
      secs !== null ? el("span.muted", {}, ` · ${duration(secs)}`) : null,
    ),
    body,
  );
  return childLink ? [part, childLink] : part;
}

function summarise(input) {
  if (!input || typeof input !== "object") return "";
  const v = input.command || input.filePath || input.path || input.pattern || input.description || input.url || "";
  const s = String(v);
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}
