// Costs: spend over a window by agent, model, driver and day, cache-hit ratio, and the most
// expensive sessions and trees (a tree's cost rolls up every subagent under its root).

import { clear, el, fact, getJSON, num, pct, pill, usd } from "./util.js";
import { filterBar } from "./filters.js";

const WINDOWS = [["", "last 7 days"], ["24h", "last 24 hours"], ["30d", "last 30 days"], ["90d", "last 90 days"]];
const GROUPS = [["agent", "By agent"], ["model", "By model"], ["driver", "By driver"], ["day", "By day"]];

export function mount(root, route, ctx) {
  const bar = filterBar(route, ctx, [{ name: "since", label: "Window", type: "select", options: WINDOWS }]);
  const totals = el("div", { id: "cost-totals" });
  const groups = el("div.cols", { id: "cost-groups" });
  const tops = el("div.cols", { id: "cost-top" });
  root.append(el("h1", {}, "Costs"), bar.form, totals, groups, tops);
  return {
    autoRefresh: true,
    errorSlot: totals,
    async refresh() {
      const data = await getJSON("/api/costs", { since: route.params.get("since") || "7d", top: 10 });
      drawTotals(totals, data);
      clear(groups, GROUPS.map(([by, title]) => breakdown(by, title, data.breakdowns[by] || [])));
      clear(
        tops,
        topTable("Most expensive sessions", "top-sessions", data.top_sessions || [], "cost_usd", "own cost"),
        topTable("Most expensive trees", "top-trees", data.top_trees || [], "subtree_cost_usd", "tree cost"),
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

function breakdown(by, title, rows) {
  const max = Math.max(0, ...rows.map((r) => r.cost_usd || 0));
  return el(
    "section",
    { id: `by-${by}`, "aria-labelledby": `h-by-${by}` },
    el("h2", { id: `h-by-${by}` }, title),
    rows.length
      ? el(
          "table.grid",
          {},
          el("thead", {}, el("tr", {}, el("th", {}, by), el("th.num", {}, "count"), el("th.num", {}, "tokens in"), el("th.num", {}, "tokens out"), el("th.num", {}, "cache hit"), el("th.num", {}, "cost"))),
          el(
            "tbody",
            {},
            rows.map((r) =>
              el(
                "tr",
                drill(by, r.key, r.source),
                el("th", { scope: "row" }, r.key ?? el("span.muted", {}, "(none)"), r.source === "claude" ? el("span.src", { title: "Claude Code CLI runs" }, "Claude CLI") : null),
                el("td.num", {}, num(r.count)),
                el("td.num", {}, num(r.tokens.input)),
                el("td.num", {}, num(r.tokens.output)),
                el("td.num", {}, pct(r.cache_hit_ratio)),
                el("td.num", {}, el("span.barcell", { style: `width:${max ? Math.round((60 * (r.cost_usd || 0)) / max) : 0}px`, "aria-hidden": "true" }), usd(r.cost_usd)),
              ),
            ),
          ),
        )
      : el("p.muted", {}, "Nothing in this window."),
  );
}

function drill(by, key, source) {
  if (key === null || key === undefined || source !== "opencode" || by === "day" || by === "driver") return {};
  return { tabindex: 0, "data-href": `#/sessions?${by}=${encodeURIComponent(key)}` };
}

function topTable(title, id, rows, field, label) {
  return el(
    "section",
    { id, "aria-labelledby": `h-${id}` },
    el("h2", { id: `h-${id}` }, title),
    rows.length
      ? el(
          "table.grid",
          {},
          el("thead", {}, el("tr", {}, el("th", {}, "session"), el("th", {}, "agent"), el("th.num", {}, "sessions"), el("th.num", {}, label))),
          el(
            "tbody",
            {},
            rows.map((s) =>
              el(
                "tr",
                { tabindex: 0, "data-href": `#/session/${encodeURIComponent(s.session_id)}` },
                el("td.title", {}, el("a", { href: `#/session/${encodeURIComponent(s.session_id)}` }, s.title || s.session_id), " ", s.verdict && s.verdict !== "healthy" ? pill(s.verdict) : null),
                el("td", {}, s.agent || "–"),
                el("td.num", {}, num(s.subtree_session_count)),
                el("td.num", {}, usd(s[field])),
              ),
            ),
          ),
        )
      : el("p.muted", {}, "Nothing in this window."),
  );
}
