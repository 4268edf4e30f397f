// One session: its record, its tree (subagents nested), the per-turn table, the findings
// (evidence links to the exact parts) and the message timeline read from the archive.

import { ApiError, clear, duration, el, errorBox, fact, getJSON, num, paramsObject, pct, pill, table, timeEl, usd, when } from "./util.js";
import { drawTimeline } from "./timeline.js";
import { drawLiveFindings, drawLiveHead, drawLiveMessages, drawLiveTree, isLiveNow } from "./live.js";
import { drawActions, fetchActions } from "./actions.js";

export function mount(root, route, ctx) {
  const id = route.arg;
  const head = el("div", { id: "session-head" });
  const now = el("div", { id: "live-now" });
  const tree = el("div", { id: "tree" });
  const findings = el("div", { id: "findings" });
  const turns = el("div", { id: "turns" });
  const timeline = el("div", { id: "timeline" });
  const actions = el("div", { id: "actions" });
  root.append(
    el("p.crumbs", {}, el("a", { href: "#/sessions" }, "Sessions"), " / ", el("code", {}, id || "")),
    now,
    head,
    el("section", { "aria-labelledby": "h-tree" }, el("h2", { id: "h-tree" }, "Tree"), tree),
    el("section", { "aria-labelledby": "h-findings" }, el("h2", { id: "h-findings" }, "Findings"), findings),
    el("section", { "aria-labelledby": "h-actions" }, el("h2", { id: "h-actions" }, "Actions"), actions),
    el("section", { "aria-labelledby": "h-turns" }, el("h2", { id: "h-turns" }, "Turns"), turns),
    el("section", { "aria-labelledby": "h-timeline" }, el("h2", { id: "h-timeline" }, "Messages"), timeline),
  );
  const goTo = (params) => ctx.update(params);
  const handle = {
    // An archive is a snapshot: the page does not redraw under the reader (press r to reload);
    // a session running now does, in place, so the reader keeps the scroll position.
    autoRefresh: false,
    errorSlot: head,
    async refresh() {
      const p = route.params;
      const at = p.get("at");
      // Ask whether it runs now first (an empty list, not a 404, when it does not), so a
      // session that is only live never asks for an archive it does not have.
      const found = (await getJSON("/api/live", { session_id: id })).items[0];
      const live = found ? await getJSON(`/api/live/${encodeURIComponent(id)}`) : null;
      const archived = !found || found.archived ? getJSON(`/api/sessions/${encodeURIComponent(id)}`) : null;
      fetchActions(id).then((page) => drawActions(actions, page), () => clear(actions));
      handle.autoRefresh = live !== null && !["idle", "deleted"].includes(live.live.state);
      if (archived === null) {
        if (live === null) throw new ApiError(404, "not_found", `no archived or live session ${id}`);
        document.title = `${live.live.title || id} · octel`;
        clear(now);
        drawLiveHead(head, live);
        drawLiveTree(tree, live, id);
        drawLiveFindings(findings, live);
        clear(turns, el("p.muted", {}, "Not archived yet: the per-turn table comes with the archive, once the run goes quiet."));
        const msgs = await getJSON(`/api/live/${encodeURIComponent(id)}/messages`, { offset: p.get("offset"), limit: 50 }).catch((e) => e);
        const waitingAsk = live.live.state === "waiting_permission";
        drawLiveMessages(timeline, msgs, (offset) => goTo({ ...paramsObject(p), offset }), { waitingAsk });
        return;
      }
      // An archived session shows its record; the live block only while it runs now (an idle or
      // deleted row left from before the archive would contradict the record).
      if (isLiveNow(live)) drawLiveHead(now, live, { archived: true });
      else clear(now);
      let data;
      try {
        data = await archived;
      } catch (e) {
        if (e instanceof ApiError && e.status === 404 && live === null) {
          noSuchSession(root, id);
          return;
        }
        throw e;
      }
      const page = await getJSON(`/api/sessions/${encodeURIComponent(id)}/messages`, { offset: at ? "" : p.get("offset"), at, limit: 50 }).catch((e) => e);
      document.title = `${data.session.title || id} · octel`;
      drawHead(head, data);
      drawTree(tree, data.tree && { ...data.tree, parent_session_id: data.parent_session_id, root_session_id: data.root_session_id }, id);
      drawFindings(findings, data.findings || [], id);
      drawTurns(turns, data.per_turn, data.archive);
      if (page instanceof Error) {
        clear(timeline, errorBox(page));
        return;
      }
      drawTimeline(timeline, page, (offset) => goTo({ ...paramsObject(p), at: "", offset }));
      if (at) highlight(timeline, at);
    },
  };
  return handle;
}

// One clear state for an id the store does not know, instead of empty sections.
function noSuchSession(root, id) {
  document.title = "No such session · octel";
  clear(
    root,
    el("p.crumbs", {}, el("a", { href: "#/sessions" }, "Sessions"), " / ", el("code", {}, id || "")),
    el("h1", { id: "no-such-session" }, "No such session"),
    el("p", {}, "No archived session has the id ", el("code", {}, id || ""), ". It may not be archived yet, or it was pruned."),
    el("p", {}, el("a", { href: `#/sessions?q=${encodeURIComponent(id || "")}` }, "Search the sessions"), " · ", el("a", { href: "#/sessions" }, "All sessions")),
  );
}

// The trace this tree was (or will be) exported as; a link when a trace URL template is set.
function traceLink(trace) {
  const id = el("code", {}, trace.trace_id);
  return trace.url ? el("a", { id: "trace-link", href: trace.url, target: "_blank", rel: "noopener noreferrer" }, id) : id;
}

function drawHead(node, data) {
  const s = data.session;
  const t = s.tokens || {};
  clear(
    node,
    el("h1", {}, s.title || s.session_id, " ", pill(s.verdict), s.in_flight ? [" ", pill("in flight", "inflight")] : null),
    el(
      "p.muted",
      {},
      [s.agent && `agent ${s.agent}`, s.model && `model ${s.model}`, s.label && `label ${s.label}`, s.depth ? `subagent at depth ${s.depth}` : "root session", s.source === "claude_code" ? `Claude Code ${s.opencode_version || ""}`.trim() : s.opencode_generation && `OpenCode ${s.opencode_generation}.x API${s.opencode_version ? ` (${s.opencode_version})` : ""}`, s.reported_cost_usd != null && `CLI reported ${usd(s.reported_cost_usd)}${s.cost_mismatch ? " (differs)" : ""}`, s.unpriced_models && s.unpriced_models.length && `unpriced: ${s.unpriced_models.join(", ")}`]
        .filter(Boolean)
        .join(" · "),
      data.trace ? [" · trace ", traceLink(data.trace)] : null,
    ),
    cycleLine(data.cycle),
    el(
      "div.facts",
      {},
      fact("turns", num(s.turn_count)),
      fact("duration", duration(s.duration_s)),
      fact("cost (own)", usd(s.cost_usd), "this session alone, without its subagents"),
      fact("cost (tree)", usd(s.subtree_cost_usd), `${s.subtree_session_count} session(s) in this subtree`),
      fact("tokens in / out", `${num(t.input)} / ${num(t.output)}`),
      fact("reasoning", num(t.reasoning)),
      fact("cache read / write", `${num(t.cache_read)} / ${num(t.cache_write)}`),
      fact("cache hit", pct(s.cache_hit_ratio), "cache read ÷ (input + cache read), as the server computed it"),
      fact("created", when(s.created_at)),
      fact("archived", when(s.archived_at)),
    ),
    data.archive && !data.archive.available ? el("p.error", {}, `The archive file is not readable: ${data.archive.error}`) : null,
    walkErrors(data.archive),
    redactions(data.archive),
  );
}

// The cycle this session belongs to (named by the archive or posted with the session).
function cycleLine(c) {
  if (!c) return el("p.muted", { id: "session-cycle" }, "No dispatcher cycle names this session.");
  const state = c.in_flight ? pill("in flight", "inflight") : c.terminal_state ? pill(c.terminal_state, `s-${c.terminal_state.replace(/[^a-z0-9]+/gi, "_")}`) : null;
  return el(
    "p",
    { id: "session-cycle" },
    "cycle ",
    el("a", { href: `#/drivers?driver=${encodeURIComponent(c.driver)}` }, el("code", {}, c.cycle_id)),
    " · driver ",
    el("strong", {}, c.driver),
    " ",
    state,
    c.worker_outcome ? ` · outcome ${c.worker_outcome}` : "",
  );
}

function walkErrors(archive) {
  const errs = (archive && archive.walk_errors) || [];
  if (!errs.length) return null;
  return el(
    "div.finding.stuck",
    { id: "walk-errors" },
    el("strong", {}, "The archive is incomplete: "),
    `${errs.length} thing(s) could not be fetched from the server.`,
    el("ul", {}, errs.map((e) => el("li", {}, `${e.what || "?"}${e.session_id ? ` of ${e.session_id}` : ""}: ${e.error_kind || "error"}${e.status ? ` (HTTP ${e.status})` : ""} — ${e.message || ""}`))),
  );
}

function redactions(archive) {
  const counts = Object.entries((archive && archive.redaction) || {}).filter(([, n]) => n > 0);
  if (!counts.length) return null;
  return el(
    "p.muted",
    { id: "redactions" },
    el("mark.redacted", {}, "redacted"),
    " before archiving: ",
    counts.map(([rule, n]) => `${rule} ×${n}`).join(", "),
    ". Each placeholder keeps a fingerprint, so the same secret is recognisable across archives.",
  );
}

function drawTree(node, tree, current) {
  if (!tree) {
    clear(node, el("p.muted", {}, "No tree."));
    return;
  }
  const item = (s) =>
    el(
      "li",
      { dataset: { session: s.session_id } },
      s.session_id === current
        ? el("span.here", { "aria-current": "true" }, s.title || s.session_id)
        : el("a", { href: `#/session/${encodeURIComponent(s.session_id)}` }, s.title || s.session_id),
      " ",
      s.agent ? el("span.muted", {}, `@${s.agent} `) : null,
      pill(s.verdict || "–"),
      s.in_flight ? [" ", pill("in flight", "inflight")] : null,
      el("span.muted", {}, ` ${num(s.turn_count)} turns · own ${usd(s.cost_usd)}`),
      s.children && s.children.length ? el("span.muted", {}, ` · tree ${usd(s.subtree_cost_usd)} over ${s.subtree_session_count} sessions`) : null,
      s.children && s.children.length ? el("ul", {}, s.children.map(item)) : null,
    );
  const up = [];
  if (tree.parent_session_id) up.push(el("a", { href: `#/session/${encodeURIComponent(tree.parent_session_id)}` }, "↑ parent"));
  if (tree.root_session_id && tree.root_session_id !== tree.parent_session_id && tree.root_session_id !== current) {
    up.push(" ", el("a", { href: `#/session/${encodeURIComponent(tree.root_session_id)}` }, "⇑ root"));
  }
  clear(node, up.length ? el("p", {}, up) : null, el("ul.tree", {}, item(tree)));
}

function drawFindings(node, findings, id) {
  const shown = findings.filter((f) => f.verdict !== "healthy");
  if (!shown.length) {
    clear(node, el("p.ok", {}, "No detector found anything wrong."));
    return;
  }
  // The server says each finding in a sentence and names each piece of evidence by turn and tool.
  clear(
    node,
    shown.map((f) =>
      el(
        `div.finding.${f.verdict}`,
        {},
        el("p.sentence", {}, f.sentence || f.detector),
        el("span.muted", {}, `${f.detector} · `), pill(f.verdict), el("span.muted", {}, ` score ${Number(f.score).toFixed(2)}`),
        (f.evidence_links || []).length
          ? el(
              "div.ev",
              {},
              "evidence: ",
              f.evidence_links.map((x) => el("a", { href: `#/session/${encodeURIComponent(id)}?at=${encodeURIComponent(x.id)}`, title: `${x.kind} ${x.id}` }, x.label)),
            )
          : null,
      ),
    ),
  );
}

function drawTurns(node, turns, archive) {
  if (!turns) {
    clear(node, el("p.muted", {}, archive && archive.error ? "Per-turn metrics need the archive file." : "No per-turn metrics."));
    return;
  }
  if (!turns.length) {
    clear(node, el("p.muted", {}, "No assistant turns."));
    return;
  }
  const head = ["turn", "message", "started", "duration", "input", "output", "reasoning", "cache read", "cache write", "cost", "tools", "finish", "error"];
  clear(
    node,
    table(
      "table.grid.turns",
      head.map((h, i) => [h, i > 3 && i < 11 ? "num" : null]),
      turns.map((t, n) =>
        el(
          `tr${t.in_flight ? ".inflight" : ""}`,
          { tabindex: 0, "data-href": t.message_id ? `${window.location.hash.split("?")[0]}?at=${encodeURIComponent(t.message_id)}` : null },
          el("td", {}, String(n + 1), t.in_flight ? [" ", pill("in flight", "inflight")] : null),
          el("td", {}, String(t.index + 1)),
          el("td", {}, t.created_at ? timeEl(t.created_at) : "–"),
          el("td.num", {}, t.in_flight ? "–" : duration(t.duration_s)),
          el("td.num", {}, num(t.tokens_input)),
          el("td.num", {}, num(t.tokens_output)),
          el("td.num", {}, num(t.tokens_reasoning)),
          el("td.num", {}, num(t.tokens_cache_read)),
          el("td.num", {}, num(t.tokens_cache_write)),
          el("td.num", {}, usd(t.cost_usd)),
          el("td.num", {}, num(t.tool_calls)),
          el("td", {}, t.finish || ""),
          el("td.error", {}, t.error || ""),
        ),
      ),
    ),
  );
}

function highlight(root, at) {
  const target = document.getElementById(`p-${at}`) || document.getElementById(`m-${at}`);
  if (!target || !root.contains(target)) return;
  target.classList.add("target");
  if (target.tagName === "DETAILS") target.open = true;
  target.scrollIntoView({ block: "center" });
  target.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: true });
}
