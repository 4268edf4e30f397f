// The Overview's quota tiles: each window of OCTEL_BUDGETS_FILE, how much of it is used and
// when it runs out at the last 24 hours' rate, as the server computed it (/api/quotas).

import { clear, el, num, pct, pill, usd, when } from "./util.js";

function amount(q, v) {
  return q.unit === "usd" ? usd(v) : `${num(Math.round(v))} tokens`;
}

// ok under the warning share, warn past it or on a forecast before the reset, bad once run out
function level(q) {
  if (q.used_ratio >= 1) return "st-down";
  return q.runs_out_before_reset || q.used_ratio >= 0.8 ? "st-long" : "st-ok";
}

function quotaTile(q) {
  const kind = level(q);
  const share = Math.min(q.used_ratio, 1);
  return el(
    `article.tile.quota.${kind === "st-down" ? "state-down" : kind === "st-long" ? "state-unknown" : "state-ok"}`,
    { "aria-label": `${q.provider} quota ${q.window}: ${pct(q.used_ratio)} used`, dataset: { provider: q.provider, window: q.window } },
    el("header", {}, el("strong", {}, `${q.provider} · ${q.window}`), pill(pct(q.used_ratio), kind)),
    el("div.quota-bar", { role: "presentation" }, el("span", { style: `width: ${(share * 100).toFixed(1)}%` })),
    el(
      "dl",
      {},
      el("dt", {}, "used"), el("dd", {}, `${amount(q, q.used)} of ${amount(q, q.limit)}`),
      el("dt", {}, "last 24 h"), el("dd", {}, amount(q, q.last_24h)),
      el("dt", {}, "renews"), el("dd", {}, q.reset_at ? when(q.reset_at) : "never: a rolling window"),
    ),
    el(q.runs_out_before_reset ? "p.reason.warn" : "p.reason", {}, q.forecast),
  );
}

export function drawQuotas(section, node, answer) {
  section.hidden = !answer.quotas.length; // no quota declared: no section
  clear(node, answer.quotas.map(quotaTile));
}
