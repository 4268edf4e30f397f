// Costs: spend over a window (a bar per day, stacked by agent or model), by agent, model,
// driver and day (one row per key, OpenCode's and Claude Code's spend inside it), cache-hit
// ratio, and the most expensive sessions and trees, Claude CLI runs among them.

import { clear, el, fact, getJSON, num, pct, table, usd } from "./util.js";
import { filterBar } from "./filters.js";
import { spendChart } from "./chart.js";
import { statePill } from "./live.js";

const WINDOWS = [["", "last 7 days"], ["24h", "last 24 hours"], ["30d", "last 30 days"], ["90d", "last 90 days"]];
const STACKS = [["", "by agent"], ["model", "by model"]];
const GROUPS = [["agent", "By agent"], ["model", "By model"], ["driver", "By driver"], ["day", "By day"]];
// `claude` is Claude Code: its archived sessions and the CLI runs whose conversation is not kept
const SOURCE = { opencode: "OpenCode", claude: "Claude Code" };

export function mount(root, route, ctx) {
  const bar = filterBar(route, ctx, [
    { name: "since", label: "Window", type: "select", options: WINDOWS },
    { name: "stack", label: "Chart", type: "select", options: STACKS },
  ]);
  const totals = el("div", { id: "cost-totals" });
  const chart = el("div", { id: "cost-chart" });
  const groups = el("div.cols", { id: "cost-groups" });
  const tops = el("div.cols", { id: "cost-top" });
  const live = el("div", { id: "cost-live" });
  root.append(el("h1", {}, "Costs"), bar.form, totals, live, chart, groups, tops);
  return {
    autoRefresh: true,
    errorSlot: totals,
    async refresh() {
      const p = route.params;
      const data = await getJSON("/api/costs", { since: p.get("since") || "7d", stack: p.get("stack") || "agent", top: 10 });
      drawTotals(totals, data);
      drawLive(live, data.live);
      clear(chart, spendChart(data.daily, chart.clientWidth));
      clear(groups, GROUPS.map(([by, title]) => breakdown(by, title, data.breakdowns[by] || [])));
      clear(
        tops,
        topTable("Most expensive sessions and runs", "top-sessions", data.top_sessions || [], false),
        topTable("Most expensive trees", "top-trees", data.top_trees || [], true),
      );
    },
  };
}

function drawTotals(node, data) {
  const t = data.totals || {};
  clear(
    node,
    el(
      "div.facts",
      {},
      fact("spend", usd(t.cost_usd)),
      fact("sessions and runs", num(t.count)),
      fact("tokens in / out", `${num((t.tokens || {}).input)} / ${num((t.tokens || {}).output)}`),
      fact("cache read / write", `${num((t.tokens || {}).cache_read)} / ${num((t.tokens || {}).cache_write)}`),
      fact("cache hit", pct(t.cache_hit_ratio), "cache read ÷ (input + cache read)"),
    ),
    el("p.muted", {}, `From ${data.since.slice(0, 16).replace("T", " ")} to ${data.until.slice(0, 16).replace("T", " ")} UTC; a session counts when it was created, a Claude CLI run when it was recorded.`),
  );
}

// Spend so far of the sessions running now: not archived yet, so in none of the rows below;
// a session archived and running again shows only what it spent since its archive.
function drawLive(node, live) {
  if (!live || !live.count) {
    clear(node);
    return;
  }
  clear(
    node,
    el(
      "section",
      { "aria-labelledby": "h-cost-live" },
      el("h2", { id: "h-cost-live" }, "Live now ", el("span.pill.live-busy", {}, "live"), ` ${usd(live.cost_usd)} so far`),
      el("p.muted", {}, `${num(live.count)} session(s) running now; their spend joins the rows below once archived, and is counted once.`),
      table(
        "table.grid.live-spend",
        [["session"], ["state"], ["agent"], ["model"], ["spent so far", "num.decisive"]],
        live.sessions.map((s) => {
          const href = `#/session/${encodeURIComponent(s.session_id)}`;
          return el(
            "tr",
            { tabindex: 0, "data-href": href, dataset: { session: s.session_id } },
            el("td.title", {}, el("a", { href }, s.title || s.session_id), s.archived ? el("span.muted", {}, " (since its archive)") : null),
            el("td", {}, statePill(s.state)),
            el("td", {}, s.agent || "–"),
            el("td", {}, s.model || "–"),
            el("td.num.decisive", {}, usd(s.cost_usd)),
          );
        }),
      ),
    ),
  );
}

function sourcesLine(r) {
  if (!r.sources || r.sources.length < 2) {
    const only = r.sources && r.sources[0];
    return only && only.source === "claude" ? el("span.src", { title: "Claude Code sessions and CLI runs" }, SOURCE.claude) : null;
  }
  return el("span.sources", {}, r.sources.map((x) => `${SOURCE[x.source] || x.source} ${usd(x.cost_usd)} (${num(x.count)})`).join(" · "));
}

function breakdown(by, title, rows) {
  const max = Math.max(0, ...rows.map((r) => r.cost_usd || 0));
  return el(
    "section",
    { id: `by-${by}`, "aria-labelledby": `h-by-${by}` },
    el("h2", { id: `h-by-${by}` }, title),
    rows.length
      ? table(
          "table.grid",
          [[by], ["sessions and runs", "num"], ["tokens in", "num"], ["tokens out", "num"], ["cache hit", "num"], ["cost", "num.decisive"]],
          rows.map((r) =>
            el(
              "tr",
              drill(by, r),
              el("th", { scope: "row" }, r.key ?? el("span.muted", {}, "(none)"), " ", sourcesLine(r)),
              el("td.num", {}, num(r.count)),
              el("td.num", {}, num(r.tokens.input)),
              el("td.num", {}, num(r.tokens.output)),
              el("td.num", {}, pct(r.cache_hit_ratio)),
              el("td.num.decisive", {}, el("span.barcell", { style: `width:${max ? Math.round((60 * (r.cost_usd || 0)) / max) : 0}px`, "aria-hidden": "true" }), usd(r.cost_usd)),
            ),
          ),
        )
      : el("p.muted", {}, "Nothing in this window."),
  );
}

function drill(by, r) {
  const opencode = (r.sources || []).some((x) => x.source === "opencode");
  if (r.key === null || r.key === undefined || !opencode || by === "day" || by === "driver") return {};
  return { tabindex: 0, "data-href": `#/sessions?${by}=${encodeURIComponent(r.key)}` };
}

function topTable(title, id, rows, trees) {
  const cost = trees ? "subtree_cost_usd" : "cost_usd";
  const head = trees
    ? [["root session or run"], ["agent"], ["sessions in tree", "num", { title: "sessions in the tree: the root and all its subagents" }], ["tree cost", "num.decisive"]]
    : [["session or run"], ["agent"], ["model"], ["own cost", "num.decisive"]];
  return el(
    "section",
    { id, "aria-labelledby": `h-${id}` },
    el("h2", { id: `h-${id}` }, title),
    rows.length
      ? table(
          "table.grid",
          head,
          rows.map((s) => {
            const run = s.source === "claude";
            const href = run ? null : `#/session/${encodeURIComponent(s.session_id)}`;
            const name = run
              ? [s.title || s.run_key, " ", el("span.src", { title: "Claude Code CLI run" }, "Claude CLI")]
              : [el("a", { href }, s.title || s.session_id), s.verdict && s.verdict !== "healthy" ? [" ", el(`span.pill.${s.verdict}`, {}, s.verdict)] : null];
            return el(
              "tr",
              href ? { tabindex: 0, "data-href": href } : { dataset: { run: s.run_key } },
              el("td.title", {}, name),
              el("td", {}, s.agent || "–"),
              trees ? el("td.num", {}, num(s.subtree_session_count)) : el("td", {}, s.model || "–"),
              el("td.num.decisive", {}, usd(s[cost])),
            );
          }),
        )
      : el("p.muted", {}, "Nothing in this window."),
  );
}
