// The live side of the console: "Running now" on the Overview, live rows in Sessions, and a
// live session's page. Everything drawn here comes from /api/live (numbers as the server
// computed them; ages are the server's, moved on by the time since the answer).

import { clear, duration, el, errorBox, getJSON, num, pill, table, treeLead, treeOrder, usd } from "./util.js";
import { answerForm } from "./answer.js";
import { drawTimeline } from "./timeline.js";

const QUIET = new Set(["idle", "interrupted", "deleted"]);
const STATE_TEXT = {
  waiting_permission: "waiting on an ask",
  retrying: "retrying",
  unknown: "unknown",
  running_tool: "running a tool",
  compacting: "compacting",
  busy: "busy",
  errored: "errored",
  interrupted: "interrupted",
  idle: "idle",
  deleted: "deleted",
};

export function statePill(state) {
  return el(`span.pill.live-${state}`, { dataset: { state } }, STATE_TEXT[state] || state);
}

export function fetchLive(params) {
  return getJSON("/api/live", params);
}

function sessionLink(s) {
  const href = `#/session/${encodeURIComponent(s.session_id)}`;
  return el("a", { href }, s.title || s.session_id);
}

// A cycle opens its driver's cycles, as an archived session's cycle line does.
function cycleLink(s) {
  return el("a", { href: `#/drivers?driver=${encodeURIComponent(s.driver || "")}` }, el("code", {}, s.cycle_id));
}

function patterns(ask) {
  return ask.patterns.length ? [" (", ask.patterns.slice(0, 3).map((p, i) => [i ? ", " : "", el("code", {}, p)]), ")"] : null;
}

const CLAUDE = "claude_code";

// A Claude Code session waits on the person at its own terminal: a permission prompt or a
// question the console cannot answer (the CLI has no door for it).
function needsInput(s) {
  const said = { question: "a question to the user", dialog: "a dialog" }[s.ask.permission];
  return `needs input: ${said || `permission for ${s.ask.permission}`}`;
}

// An unanswered ask is the loudest thing on the page: one block each, oldest first. On the
// session's own page (`own`) the block does not link to the page it is on.
function askBlock(s, own = false) {
  return el(
    "div.ask-alert",
    { role: "alert", dataset: { session: s.session_id } },
    el("strong.ask-age", {}, duration(s.ask.waited_s)),
    " ",
    el("span", {}, s.source === CLAUDE ? needsInput(s) : `${s.ask.permission} ask`),
    patterns(s.ask),
    s.source === CLAUDE ? " · answer it at its terminal" : " unanswered",
    own ? null : [" · ", sessionLink(s)],
    s.cycle_id ? [" · cycle ", cycleLink(s), ` of ${s.driver}`] : null,
  );
}

export function drawRunningNow(node, page) {
  const counts = Object.entries(page.counts).filter(([, n]) => n > 0);
  const running = page.items.filter((s) => !QUIET.has(s.state));
  if (!page.items.length) {
    clear(node, el("p.muted", {}, "No session is being followed right now. `octel watch --server URL` follows an OpenCode server, `octel watch --claude-dir DIR` Claude Code sessions."));
    return;
  }
  const asks = running.filter((s) => s.state === "waiting_permission" && s.ask);
  const others = running.filter((s) => s.state !== "waiting_permission").sort((a, b) => b.state_age_s - a.state_age_s);
  clear(
    node,
    asks.map(askBlock),
    el("ul.chips.live-counts", {}, counts.map(([state, n]) => el("li", { dataset: { state } }, statePill(state), " ", el("strong", {}, num(n))))),
    others.length
      ? liveTable(others.slice(0, 10), { grouped: false, caption: "Longest stalls first" })
      : el("p.ok", {}, asks.length ? "" : "Nothing is stalled."),
    el("p", {}, el("a", { href: "#/sessions?show=live" }, "All live sessions →")),
  );
}

// What the session's server runs (1.x and 2.x servers may be followed side by side).
export function opencodeText(s) {
  return s.server_version || (s.generation ? `${s.generation}.x` : "–");
}

export function liveTable(items, { grouped: group = true, caption = null } = {}) {
  // children under their root: each root, then its descendants depth-first
  const rows = group ? treeOrder(items) : items.map((s) => ({ s, depth: 0, detached: false }));
  const head = [["session"], ["state"], ["for", "num"], ["what"], ["agent"], ["turns", "num"], ["cost", "num"], ["verdict", "decisive"], ["cycle"], ["opencode"]];
  return table(
    "table.grid.live",
    head,
    rows.map((row) => {
      const s = row.s;
      return el(
        "tr",
        { tabindex: 0, "data-href": `#/session/${encodeURIComponent(s.session_id)}`, dataset: { session: s.session_id, state: s.state } },
        el("td.title", {}, treeLead(row), sessionLink(s)),
        el("td", {}, statePill(s.state)),
        el("td.num", {}, duration(s.state_age_s)),
        el("td.what", {}, s.explanation.split(";")[0]),
        el("td", {}, s.agent || (s.source === CLAUDE ? "Claude Code" : "–")),
        el("td.num", {}, num(s.turns)),
        el("td.num", {}, usd(s.cost_usd)),
        el("td.decisive", {}, pill(s.verdict), s.worst_detector && s.verdict !== "healthy" ? el("span.muted", {}, ` ${s.worst_detector}`) : null),
        el("td", {}, s.cycle_id ? cycleLink(s) : "–"),
        el("td.opencode", { title: s.server }, opencodeText(s)),
      );
    }),
    caption,
  );
}

// What the server's sentence adds to "<state> for <age>": its first clause names the state and
// its age again (the page read "idle for 2m 29s — idle for 2m 28s"), so only what is new is kept:
// the tool, the attempt, the reason, the verdict and the cycle. An ask is said by its own block.
function beyondState(s) {
  const [first, ...more] = s.explanation.split("; ");
  let lead = first.replace(/ for \d+[dhms]( \d+[dhms])?/, "").replace(new RegExp(`^${s.state}\\b`), "").replace(/^[,:]?\s*/, "");
  if (s.state === "waiting_permission" && s.ask) lead = "";
  const rest = [lead, ...more].filter(Boolean).join("; ");
  return rest ? ` — ${rest}` : "";
}

export function isLiveNow(detail) {
  return detail !== null && !QUIET.has(detail.live.state) && detail.live.state !== "unknown";
}

// A live session's page: state and age, what it does, its tree so far and live findings.
// With `archived`, the block sits above the session's record: it carries no title of its own
// (the record's h1 names the session) and no cycle unless the live row names one.
export function drawLiveHead(node, detail, { archived = false } = {}) {
  const s = detail.live;
  const t = s.tokens;
  clear(
    node,
    archived ? el("h2", { id: "h-live-now" }, "Running now ", statePill(s.state)) : el("h1", {}, s.title || s.session_id, " ", statePill(s.state)),
    s.state === "waiting_permission" && s.ask ? [askBlock(s, true), s.source === CLAUDE ? null : answerForm(s)] : null,
    el("p.live-now", { dataset: { state: s.state } }, el("strong", {}, `${STATE_TEXT[s.state] || s.state} for ${duration(s.state_age_s)}`), beyondState(s)),
    el(
      "div.facts",
      {},
      [
        ["server", el("span.url", {}, s.server), "wide"],
        ...(s.source === CLAUDE ? [] : [["opencode", opencodeText(s)]]),
        ["agent", s.agent || (s.source === CLAUDE ? "Claude Code" : "–")],
        ["model", s.model || "–"],
        ["last activity", s.inactive_s === null ? "–" : `${duration(s.inactive_s)} ago`],
        ["turns", num(s.turns)],
        ["tokens", num(t.input + t.output + t.reasoning + t.cache_read + t.cache_write)],
        ["cost so far", usd(s.cost_usd)],
        archived && !s.cycle_id ? null : ["cycle", s.cycle_id ? [cycleLink(s), ` (${s.driver})`] : "–"],
      ]
        .filter(Boolean)
        .map(([k, v, wide]) => el(wide ? "div.fact.wide" : "div.fact", {}, el("span.k", {}, k), el("span.v", {}, v))),
    ),
  );
}

export function drawLiveTree(node, detail, id) {
  clear(
    node,
    el(
      "ul.tree.live-tree",
      {},
      detail.tree.map((n) =>
        el(
          "li",
          { style: `margin-left:${n.depth * 20}px`, dataset: { session: n.session.session_id }, class: n.session.session_id === id ? "me" : "" },
          n.session.session_id === id ? el("strong", {}, n.session.title || n.session.session_id) : sessionLink(n.session),
          " ",
          statePill(n.session.state),
          el("span.muted", {}, ` ${n.session.explanation.split(";")[0]}`),
        ),
      ),
    ),
  );
}

export function drawLiveFindings(node, detail) {
  const found = detail.live.findings.filter((f) => f.verdict !== "healthy");
  if (!found.length) {
    clear(node, el("p.ok", {}, "No live finding."));
    return;
  }
  // Said as an archived session's findings are: the server's sentence, then its evidence.
  const id = detail.live.session_id;
  clear(
    node,
    found.map((f) =>
      el(
        `div.finding.${f.verdict}`,
        { dataset: { detector: f.detector } },
        el("p.sentence", {}, f.sentence || f.detector),
        el("span.muted", {}, `${f.detector} · `), pill(f.verdict), el("span.muted", {}, ` score ${Number(f.score).toFixed(2)} (live)`),
        (f.evidence_links || []).length
          ? el("div.ev", {}, "evidence: ", f.evidence_links.map((x) => el("a", { href: `#/session/${encodeURIComponent(id)}?at=${encodeURIComponent(x.id)}`, title: `${x.kind} ${x.id}` }, x.label)))
          : null,
      ),
    ),
  );
}

// The messages so far, as `octel watch` stored them. Redrawn only when they changed, with the
// tool calls and reasoning the reader opened left open, so a refresh never moves the page.
const drawn = new WeakMap();

export function drawLiveMessages(node, page, onPage, { waitingAsk = false } = {}) {
  if (page instanceof Error) {
    clear(node, errorBox(page));
    drawn.delete(node);
    return;
  }
  const key = JSON.stringify([page, waitingAsk]);
  if (drawn.get(node) === key) return;
  drawn.set(node, key);
  const open = [...node.querySelectorAll("details[open]")].map((d) => d.id).filter(Boolean);
  if (!page.items.length) {
    clear(node, el("p.muted", {}, "No message so far: octel watch stores each one as it comes."));
    return;
  }
  drawTimeline(node, page, onPage, { waitingAsk });
  if (page.earlier) node.prepend(el("p.muted", {}, `${num(page.earlier)} earlier message(s) are no longer kept live; the archive will hold every one.`));
  for (const id of open) {
    const d = document.getElementById(id);
    if (d && node.contains(d)) d.open = true;
  }
}
