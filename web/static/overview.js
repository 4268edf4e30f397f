// Overview: what runs now (unanswered asks first), a tile per quota window, a tile per daemon, the
// last 24 hours of cycle outcomes, stuck sessions, the alerts sent.

import { ApiError, Unreachable, ago, clear, duration, el, errorBox, getJSON, num, pill, table } from "./util.js";
import { drawRunningNow, fetchLive } from "./live.js";
import { drawQuotas } from "./quotas.js";
import { drawAlerts, fetchAlerts } from "./alerts.js";

const STATE_TEXT = {
  ok: "ok",
  running_long_worker: "long-running worker",
  down: "down",
  unknown: "unknown",
};

export function mount(root) {
  const status = el("p.fleet-status", { id: "fleet-status" });
  const tiles = el("div.tiles", { id: "daemons" });
  const outcomes = el("div", { id: "outcomes" });
  const stuck = el("div", { id: "stuck" });
  const running = el("div", { id: "running-now" });
  const quotas = el("div.tiles", { id: "quotas" });
  const quotaSection = el("section", { "aria-labelledby": "h-quotas", hidden: true }, el("h2", { id: "h-quotas" }, "Provider quotas"), quotas);
  const alerts = el("div", { id: "alerts-sent" });
  root.append(
    el("h1", {}, "Overview"),
    el("section", { "aria-labelledby": "h-running" }, el("h2", { id: "h-running" }, "Running now"), running),
    quotaSection,
    el("section", { "aria-labelledby": "h-daemons" }, el("h2", { id: "h-daemons" }, "Daemons"), status, tiles),
    el("section", { "aria-labelledby": "h-outcomes" }, el("h2", { id: "h-outcomes" }, "Cycle outcomes, last 24 hours"), outcomes),
    el("section", { "aria-labelledby": "h-stuck" }, el("h2", { id: "h-stuck" }, "Stuck sessions needing attention, last 7 days"), stuck),
    el("section", { "aria-labelledby": "h-alerts" }, el("h2", { id: "h-alerts" }, "Alerts sent"), alerts),
  );
  return {
    autoRefresh: true,
    async refresh() {
      // The parts load together; one failing API leaves the others drawn.
      const [health, summary, stuckSessions, live, quotaWindows, sent] = await Promise.allSettled([
        getJSON("/api/health"),
        getJSON("/api/cycles/summary", { hours: 24 }),
        getJSON("/api/sessions", { verdict: "stuck", since: "7d", limit: 10 }),
        fetchLive({ limit: 200 }),
        getJSON("/api/quotas"),
        fetchAlerts(),
      ]);
      for (const r of [health, summary, stuckSessions, live, quotaWindows, sent]) {
        if (r.status === "rejected" && r.reason instanceof Unreachable) throw r.reason;
      }
      draw(running, live, drawRunningNow);
      draw(quotas, quotaWindows, (node, answer) => drawQuotas(quotaSection, node, answer));
      draw(tiles, health, drawDaemons);
      if (health.status === "fulfilled") drawStatus(status, health.value);
      else clear(status);
      draw(outcomes, summary, drawOutcomes);
      draw(stuck, stuckSessions, drawStuck);
      draw(alerts, sent, drawAlerts);
    },
  };
}

function draw(node, result, fn) {
  if (result.status === "fulfilled") fn(node, result.value);
  else clear(node, errorBox(result.reason instanceof ApiError ? result.reason : new Error(String(result.reason))));
}

// The fleet in one line: its worst state, how many daemons are in each, and the open cycles
// (live ones apart from those a dead daemon left behind).
function drawStatus(node, health) {
  const kind = health.status === "running_long_worker" ? "long" : health.status;
  const counts = Object.entries(health.counts || {}).filter(([, n]) => n).map(([s, n]) => `${n} ${STATE_TEXT[s] || s}`);
  const cycles = [`${health.cycles_in_flight} cycle(s) in flight`];
  if (health.cycles_orphaned) cycles.push(`${health.cycles_orphaned} orphaned`);
  clear(
    node,
    "Fleet: ",
    pill(STATE_TEXT[health.status] || health.status, `st-${kind}`),
    counts.length ? ` ${counts.join(", ")} · ` : " ",
    cycles.join(", "),
  );
}

function drawDaemons(node, health) {
  if (!health.daemons.length) {
    clear(node, el("p.muted", {}, "No daemon has sent a heartbeat or begun a cycle yet. Dispatchers report with POST /api/v1/heartbeat."));
    return;
  }
  clear(node, health.daemons.map(daemonTile), (health.more_open_cycles || []).map(moreTile));
}

// Open cycles no heartbeat named beyond the newest few of a driver: counted, with a way to the list.
function moreTile(m) {
  const parts = [`${num(m.cycles)} more open cycle(s) of ${m.driver} with no heartbeat`];
  if (m.orphaned) parts.push(`${num(m.orphaned)} orphaned`);
  return el(
    "p.more-cycles",
    { dataset: { driver: m.driver } },
    parts.join(", "),
    " · ",
    el("a", { href: `#/drivers?driver=${encodeURIComponent(m.driver)}&in_flight=1` }, "see them in Drivers"),
  );
}

function daemonTile(d) {
  const flight = d.in_flight_cycle;
  const kind = d.state === "running_long_worker" ? "long" : d.state;
  return el(
    `article.tile.state-${kind}`,
    { "aria-label": `${d.driver} on ${d.host}: ${STATE_TEXT[d.state] || d.state}`, dataset: { state: d.state, driver: d.driver } },
    el("header", {}, el("strong", {}, d.driver), pill(STATE_TEXT[d.state] || d.state, `st-${kind}`)),
    el(
      "dl",
      {},
      el("dt", {}, "host"), el("dd", {}, `${d.host}${d.pid ? ` · pid ${d.pid}` : ""}`),
      el("dt", {}, "heartbeat"),
      d.heartbeat_age_s === null
        ? el("dd.warn", {}, "never")
        : el("dd", { class: d.heartbeat_age_s > 60 ? "warn" : "" }, `${duration(d.heartbeat_age_s)} ago`, d.source === "file" ? " (file)" : ""),
      el("dt", {}, "process"), el("dd", {}, LIVENESS[d.liveness] || "–"),
      el("dt", {}, "cycle"),
      el(
        "dd",
        {},
        flight
          ? [
              el("a", { href: `#/drivers?driver=${encodeURIComponent(d.driver)}&in_flight=1` }, el("code", {}, flight.cycle_id)),
              " ",
              flight.orphaned ? pill("orphaned", "orphaned") : pill("in flight", "inflight"),
              flight.elapsed_s !== null ? ` ${flight.orphaned ? "open" : ""} for ${duration(flight.elapsed_s)}` : "",
              flight.orphaned ? el("span.muted", {}, " (the daemon died with it open)") : "",
            ]
          : el("span.muted", {}, "idle"),
      ),
    ),
    el("p.reason", {}, d.reason),
  );
}

const STATE_ORDER = (a, b) => a.localeCompare(b);
const LIVENESS = { alive: "alive", dead: "not running", unknown: "not on this host (cannot tell)" };

function drawOutcomes(node, summary) {
  if (!summary.drivers.length) {
    clear(node, el("p.muted", {}, "No cycles began in the last 24 hours."));
    return;
  }
  const rows = summary.drivers.map((d) => {
    const cells = [];
    const segs = [];
    for (const state of Object.keys(d.by_state).sort(STATE_ORDER)) {
      for (const [outcome, n] of Object.entries(d.by_state[state])) {
        const label = outcome ? `${state} / ${outcome}` : state;
        cells.push(el("li", {}, el("span", { class: `dot s-${cls(state)}` }), `${label}: `, el("strong", {}, num(n))));
        segs.push(el("span", { class: `seg s-${cls(state)}`, style: `flex-grow:${n}`, title: `${label}: ${n}` }));
      }
    }
    if (d.in_flight) {
      cells.push(el("li", {}, el("span.dot.s-inflight"), "in flight: ", el("strong", {}, num(d.in_flight))));
      segs.push(el("span.seg.s-inflight", { style: `flex-grow:${d.in_flight}`, title: `in flight: ${d.in_flight}` }));
    }
    if (d.orphaned) {
      cells.push(el("li", {}, el("span.dot.s-failed"), "orphaned: ", el("strong", {}, num(d.orphaned))));
      segs.push(el("span.seg.s-failed", { style: `flex-grow:${d.orphaned}`, title: `orphaned: ${d.orphaned}` }));
    }
    return el(
      "tr",
      { tabindex: 0, "data-href": `#/drivers?driver=${encodeURIComponent(d.driver)}&since=24h` },
      el("th", { scope: "row" }, d.driver),
      el("td.num", {}, num(d.total)),
      el("td", {}, el("div.bar", { "aria-hidden": "true" }, segs), el("ul.chips", {}, cells)),
    );
  });
  clear(
    node,
    table("table.grid", [["driver"], ["cycles", "num"], ["terminal state / worker outcome"]], rows),
  );
}

function cls(s) {
  return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "_");
}

function drawStuck(node, page) {
  if (!page.items.length) {
    clear(node, el("p.ok", {}, "No stuck sessions in the last 7 days. "), el("a", { href: "#/sessions?verdict=suspect" }, "Suspect sessions →"));
    return;
  }
  const now = Date.now();
  clear(
    node,
    table(
      "table.grid",
      [["session"], ["agent"], ["detector"], ["turns"], ["archived"]],
      page.items.map((s) =>
        el(
          "tr",
          { tabindex: 0, "data-href": `#/session/${encodeURIComponent(s.session_id)}` },
          el("td", {}, el("a", { href: `#/session/${encodeURIComponent(s.session_id)}` }, s.title || s.session_id), " ", pill(s.verdict)),
          el("td", {}, s.agent || "–"),
          el("td", {}, s.worst_detector || "–"),
          el("td.num", {}, num(s.turn_count)),
          el("td", {}, ago(s.archived_at, now)),
        ),
      ),
    ),
    el("p", {}, el("a", { href: "#/sessions?verdict=stuck" }, "All stuck sessions →")),
  );
}
