// Sessions: the sessions running now (live, children under their root) above the searchable
// table of archived sessions (filtered and paged by the server).

import { ago, clear, el, getJSON, num, pill, table, treeLead, treeOrder, usd } from "./util.js";
import { filterBar, pager } from "./filters.js";
import { fetchLive, liveTable } from "./live.js";
import { drawSearch } from "./search.js";

const LIVE_STATES = [["", "any state"], ["waiting_permission", "waiting on an ask"], ["retrying", "retrying"], ["unknown", "unknown"],
  ["running_tool", "running a tool"], ["compacting", "compacting"], ["busy", "busy"], ["errored", "errored"], ["interrupted", "interrupted"], ["idle", "idle"], ["deleted", "deleted"]];

const WINDOWS = [["", "any time"], ["1h", "last hour"], ["24h", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"]];

export function mount(root, route, ctx) {
  const bar = filterBar(route, ctx, [
    { name: "q", label: "Search", type: "search", placeholder: "title, label, or anything said or run" },
    { name: "agent", label: "Agent", type: "text", list: true, placeholder: "any" },
    { name: "model", label: "Model", type: "text", list: true, placeholder: "any" },
    { name: "label", label: "Label", type: "text", list: true, placeholder: "any" },
    { name: "verdict", label: "Verdict", type: "select", options: [["", "any"], ["stuck", "stuck"], ["suspect", "suspect"], ["healthy", "healthy"], ["empty", "empty (no turns)"]] },
    { name: "source", label: "Source", type: "select", options: [["", "any"], ["opencode", "OpenCode"], ["claude_code", "Claude Code"]] },
    { name: "since", label: "Window", type: "select", options: WINDOWS },
    { name: "root_only", label: "Trees", type: "select", options: [["", "all sessions"], ["1", "roots only"]] },
    { name: "show", label: "Show", type: "select", options: [["", "live and archived"], ["live", "live only"], ["archived", "archived only"]] },
    { name: "state", label: "Live state", type: "select", options: LIVE_STATES },
  ]);
  const live = el("div", { id: "live-sessions" });
  const list = el("div", { id: "sessions" });
  const found = el("section", { id: "search-hits", "aria-live": "polite" });
  root.append(el("h1", {}, "Sessions"), bar.form, found, live, list);
  return {
    autoRefresh: true,
    errorSlot: list,
    async refresh() {
      const p = route.params;
      const searched = p.get("cursor") ? null : drawSearch(found, p.get("q"), p.get("since"));
      const show = p.get("state") ? "live" : p.get("show") || "";
      if (show !== "archived") {
        // the one search box filters the live table too: titles, ids and what was said so far
        const page = await fetchLive({ state: p.get("state"), q: p.get("q") });
        drawLive(live, page, show === "live", Boolean(p.get("q")));
      } else clear(live);
      if (show === "live") {
        clear(list);
        return;
      }
      const page = await getJSON("/api/sessions", {
        q: p.get("q"),
        agent: p.get("agent"),
        model: p.get("model"),
        verdict: p.get("verdict"),
        label: p.get("label"),
        source: p.get("source"),
        since: p.get("since"),
        root_only: p.get("root_only") === "1" ? "true" : "",
        cursor: p.get("cursor"),
        limit: 50,
      });
      bar.suggest("agent", page.items.map((s) => s.agent));
      bar.suggest("model", page.items.map((s) => s.model));
      bar.suggest("label", page.items.map((s) => s.label));
      draw(list, page, route, ctx);
      await searched;
    },
  };
}

function drawLive(node, page, only, searched = false) {
  if (!page.items.length) {
    clear(node, only || searched ? el("p.muted", { id: "live-none" }, "No live session matches (octel watch follows the servers).") : null);
    return;
  }
  clear(node, el("h2", {}, "Live"), liveTable(page.items), only ? null : el("h2", {}, "Archived"));
}

function draw(node, page, route, ctx) {
  if (!page.items.length) {
    clear(node, el("p.muted", {}, "No archived sessions match these filters."), pager(route, ctx, null));
    return;
  }
  const now = Date.now();
  const head = [["session"], ["source"], ["label"], ["agent"], ["model"], ["verdict", "decisive"], ["turns", "num"], ["tokens", "num"], ["cost", "num"], ["tree cost", "num"], ["state"], ["archived"]];
  clear(
    node,
    table(
      "table.grid.sessions",
      head,
      // children under their parent when both are on the page, never under an unrelated row
      treeOrder(page.items).map((row) => {
        const s = row.s;
        const href = `#/session/${encodeURIComponent(s.session_id)}`;
        return el(
          "tr",
          { tabindex: 0, "data-href": href, dataset: { session: s.session_id } },
          el(
            "td.title",
            {},
            treeLead(row),
            el("a", { href }, s.title || s.session_id),
            s.in_flight ? [" ", pill("in flight", "inflight")] : null,
          ),
          el("td", {}, s.source === "claude_code" ? "Claude Code" : "OpenCode"),
          el("td", {}, s.label ? el("a", { href: `#/sessions?label=${encodeURIComponent(s.label)}`, title: "sessions with this label" }, s.label) : ""),
          el("td", {}, s.agent || "–"),
          el("td", {}, s.model || "–"),
          el("td.decisive", {}, pill(s.verdict), s.worst_detector && s.verdict !== "healthy" ? el("span.muted", {}, ` ${s.worst_detector}`) : null),
          el("td.num", {}, num(s.turn_count)),
          el("td.num", {}, num(s.tokens_total)),
          el("td.num", {}, usd(s.cost_usd)),
          el("td.num", {}, s.subtree_session_count > 1 ? usd(s.subtree_cost_usd) : ""),
          el("td", {}, el("span.pill.live-archived", { dataset: { state: "archived" } }, "archived")),
          el("td", {}, el("span", { title: s.archived_at }, ago(s.archived_at, now))),
        );
      }),
    ),
    pager(route, ctx, page.next_cursor),
  );
}
