// Drivers: cycles per driver over a window, then the cycles themselves (in-flight rows tinted).

import { clear, duration, el, getJSON, num, pill, table, timeEl } from "./util.js";
import { filterBar, pager } from "./filters.js";

// The default window is the summary's own (90 days), and the list of cycles keeps to it too:
// the select, the note and both tables name the same window.
const WINDOWS = [["", "last 90 days"], ["1h", "last hour"], ["24h", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"]];
const HOURS = { "1h": 1, "24h": 24, "7d": 168, "30d": 720 };

export function mount(root, route, ctx) {
  const bar = filterBar(route, ctx, [
    { name: "cycle", label: "Cycle id", type: "search", placeholder: "find a cycle by its id" },
    { name: "driver", label: "Driver", type: "text", list: true, placeholder: "all" },
    { name: "terminal_state", label: "Terminal state", type: "text", list: true, placeholder: "any" },
    { name: "in_flight", label: "In flight", type: "select", options: [["", "any"], ["1", "in flight only"], ["0", "finished only"]] },
    { name: "since", label: "Window", type: "select", options: WINDOWS },
  ]);
  const perDriver = el("div", { id: "per-driver" });
  const list = el("div", { id: "cycles" });
  root.append(
    el("h1", {}, "Drivers"),
    bar.form,
    el("section", { "aria-labelledby": "h-per" }, el("h2", { id: "h-per" }, "Cycles per driver"), perDriver),
    el("section", { "aria-labelledby": "h-cycles" }, el("h2", { id: "h-cycles" }, "Cycles"), list),
  );
  return {
    autoRefresh: true,
    errorSlot: list,
    async refresh() {
      const p = route.params;
      const since = p.get("since") || "";
      const inFlight = p.get("in_flight");
      const cycle = p.get("cycle") || "";
      const [summary, page] = await Promise.all([
        getJSON("/api/cycles/summary", { hours: HOURS[since] || 24 * 90 }),
        getJSON("/api/cycles", {
          driver: p.get("driver"),
          terminal_state: p.get("terminal_state"),
          in_flight: inFlight === "1" ? "true" : inFlight === "0" ? "false" : "",
          // a cycle looked up by id is found however old, unless a window was chosen
          since: since || (cycle ? "" : "90d"),
          cycle,
          cursor: p.get("cursor"),
          limit: 50,
        }),
      ]);
      bar.suggest("driver", summary.drivers.map((d) => d.driver));
      bar.suggest("terminal_state", summary.drivers.flatMap((d) => Object.keys(d.by_state)));
      drawPerDriver(perDriver, summary, since);
      drawCycles(list, page, route, ctx, cycle);
    },
  };
}

function drawPerDriver(node, summary, since) {
  if (!summary.drivers.length) {
    clear(node, el("p.muted", {}, "No cycles in this window."));
    return;
  }
  const states = [...new Set(summary.drivers.flatMap((d) => Object.keys(d.by_state)))].sort();
  const count = (d, s) => Object.values(d.by_state[s] || {}).reduce((a, b) => a + b, 0);
  clear(
    node,
    table(
      "table.grid",
      [["driver"], ["cycles", "num"], ["in flight", "num"], ["orphaned", "num"], ...states.map((s) => [s, "num"])],
      summary.drivers.map((d) =>
        el(
          "tr",
          { tabindex: 0, "data-href": `#/drivers?driver=${encodeURIComponent(d.driver)}${since ? `&since=${since}` : ""}` },
          el("th", { scope: "row" }, d.driver),
          el("td.num", {}, num(d.total)),
          el("td.num", {}, d.in_flight ? pill(`${d.in_flight} in flight`, "inflight") : "0", d.long_running ? el("span.muted", {}, ` (${d.long_running} long-running)`) : null),
          el("td.num", {}, d.orphaned ? pill(`${d.orphaned} orphaned`, "orphaned") : "0"),
          states.map((s) => el("td.num", {}, num(count(d, s)))),
        ),
      ),
    ),
    el("p.muted", {}, `Window: ${since ? `last ${since}` : "last 90 days"}; summary counts cycles by the time they began.`),
  );
}

function drawCycles(node, page, route, ctx, cycle) {
  if (!page.items.length) {
    const none = cycle ? `No cycle has the id “${cycle}”${route.params.get("since") ? " in this window" : ""}.` : "No cycles match these filters.";
    clear(node, el("p.muted", {}, none), pager(route, ctx, null));
    return;
  }
  const head = ["cycle", "driver", "host", "started", "duration", "cand.", "claims", "proc.", "esc.", "terminal state", "outcome", "error", "session"];
  clear(
    node,
    table(
      "table.grid.cycles",
      head.map((h) => [h]),
      page.items.map((c) =>
        el(
          `tr${c.in_flight ? ".inflight" : ""}`,
          { dataset: { cycle: c.cycle_id } },
          el(
            "td",
            {},
            el("code", {}, c.cycle_id),
            c.orphaned ? [" ", pill("orphaned", "orphaned")] : c.in_flight ? [" ", pill("in flight", "inflight")] : null,
            c.long_running ? el("span.muted", { title: c.daemon_reason || "" }, " long-running worker") : null,
            c.start_synthesised ? [" ", pill("start synthesised", "muted")] : null,
          ),
          el("td", {}, c.driver),
          el("td", {}, c.host || "–", c.pid ? ` · ${c.pid}` : ""),
          el("td", {}, timeEl(c.started_at)),
          el("td.num", {}, c.orphaned ? `open ${duration(c.elapsed_s)}, daemon down` : c.in_flight ? `${duration(c.elapsed_s)} so far` : duration(c.duration_s)),
          el("td.num", {}, num(c.candidates_count)),
          el("td.num", {}, num(c.claims_count)),
          el("td.num", {}, num(c.processed_count)),
          el("td.num", {}, num(c.escalated_count)),
          el("td", {}, c.terminal_state ? pill(c.terminal_state, `s-${c.terminal_state.replace(/[^a-z0-9]+/gi, "_")}`) : "–"),
          el("td", {}, c.worker_outcome || "–"),
          el("td", {}, c.error_kind || ""),
          el("td.title.session", {}, c.session_id ? sessionLink(c) : ""),
        ),
      ),
    ),
    pager(route, ctx, page.next_cursor),
  );
}

// The session by its title (redacted and cut by the server), its id in the tooltip and the link;
// a session octel has no title for shows its id, shortened.
function sessionLink(c) {
  const href = `#/session/${encodeURIComponent(c.session_id)}`;
  const text = c.session_title || el("code", {}, shortId(c.session_id));
  return el("a", { href, title: c.session_id, dataset: { session: c.session_id } }, text);
}

function shortId(id) {
  return id.length > 18 ? `${id.slice(0, 16)}…` : id;
}
