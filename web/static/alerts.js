// What alert delivery sent (Alertmanager, webhooks), as /api/v1/alerts answers: the alert, its
// state, the channel, the tries and the channel's answer, each linked to its console page.

import { clear, el, getJSON, pill, table, timeEl } from "./util.js";

const KIND = { sent: "s-done", failed: "s-failed" };

export function fetchAlerts(params) {
  return getJSON("/api/v1/alerts", { limit: 20, ...(params || {}) });
}

// the console page the alert names (a path like "/#/session/ses_1"), opened in this console
function page(a) {
  const at = (a.link || "").indexOf("#/");
  return at >= 0 ? a.link.slice(at) : null;
}

export function drawAlerts(node, answer) {
  if (!answer.items.length) {
    clear(node, el("p.muted", {}, "No alert sent: set OCTEL_ALERTMANAGER_URL or OCTEL_ALERT_WEBHOOK_URL (docs/alerts.md)."));
    return;
  }
  clear(
    node,
    table(
      "table.grid.alerts",
      [["sent"], ["alert"], ["state"], ["channel"], ["outcome"], ["tries", "num"], ["answer"], ["summary"]],
      answer.items.map((a) =>
        el(
          "tr",
          { dataset: { outcome: a.outcome, state: a.state, channel: a.channel } },
          el("td", {}, timeEl(a.sent_at)),
          el("td", {}, page(a) ? el("a", { href: page(a) }, el("code", {}, a.alert_key)) : el("code", {}, a.alert_key)),
          el("td", {}, a.state),
          el("td", {}, a.channel),
          el("td", {}, pill(a.outcome, KIND[a.outcome] || "muted")),
          el("td.num", {}, String(a.attempts)),
          el("td", {}, a.status_code === null ? a.answer || "–" : `${a.status_code} ${a.answer || ""}`),
          el("td", {}, a.summary),
        ),
      ),
    ),
  );
}
