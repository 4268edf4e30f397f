// What octel watch's rules did to a session and its tree (rejected asks, aborts, notices),
// done or skipped, as /api/v1/actions answers: the console shows the audit trail, never guesses.

import { clear, el, getJSON, pill, table, timeEl } from "./util.js";

const KIND = { done: "s-done", skipped: "suspect", gone: "muted", failed: "s-failed", notified: "suspect", sending: "suspect", unknown: "s-failed" };

export function fetchActions(sessionId) {
  return getJSON("/api/v1/actions", { session_id: sessionId, limit: 50 });
}

function evidence(a) {
  const e = a.evidence || {};
  if (a.rule === "deny_asks_after") return `${e.permission || "permission"} ask waited ${Math.round(e.waited_s || 0)}s`;
  if (a.rule === "abort_retries_after") return `retry attempt ${e.attempt}: ${e.message || ""}`;
  return `${e.detector || "detector"} finds it stuck`;
}

export function drawActions(node, page) {
  if (!page.items.length) {
    clear(node, el("p.muted", {}, "No action on this session: octel watch acts only on the rules it is given."));
    return;
  }
  clear(
    node,
    table(
      "table.grid.actions",
      [["when"], ["session"], ["rule"], ["action"], ["outcome"], ["evidence"], ["what happened"], ["server answered"]],
      page.items.map((a) =>
        el(
          "tr",
          { dataset: { outcome: a.outcome, rule: a.rule } },
          el("td", {}, timeEl(a.at)),
          el("td", {}, el("code", {}, a.session_id)),
          el("td", {}, a.rule),
          el("td", {}, a.action),
          el("td", {}, pill(a.outcome, KIND[a.outcome] || "muted")),
          el("td", {}, evidence(a)),
          el("td", {}, a.detail),
          el("td", {}, a.answer_status === null ? "–" : `${a.answer_status} ${a.answer || ""}`),
        ),
      ),
    ),
  );
}
