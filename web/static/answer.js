// Answering a live session's permission ask from its page: "Allow once" or "Reject", sent to
// POST /api/v1/asks/{id}/reply with the write (ingest) token as a bearer. The token is kept in
// this page's memory only (never stored), so a reload asks for it again. The form of each ask
// is built once and kept across redraws, so a refresh never clears what the reader typed.

import { el } from "./util.js";

let token = "";
const forms = new Map(); // request id -> its form

async function reply(sessionId, decision, status, buttons) {
  if (!token) {
    status.textContent = "Type the write token first (OCTEL_INGEST_TOKEN, or <data dir>/ingest-token).";
    return;
  }
  const url = new URL(`api/v1/asks/${encodeURIComponent(sessionId)}/reply`, document.baseURI);
  for (const b of buttons) b.disabled = true;
  status.textContent = decision === "allow" ? "Allowing…" : "Rejecting…";
  try {
    const resp = await fetch(url, {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ decision }),
    });
    const body = await resp.json().catch(() => null);
    if (resp.ok) {
      status.textContent = decision === "allow" ? `Allowed once (${body.request_id}): the session goes on.` : `Rejected (${body.request_id}): the tool call is refused.`;
      status.dataset.outcome = "done";
      return;
    }
    const why = body && body.error ? body.error.message : `HTTP ${resp.status}`;
    status.textContent = resp.status === 401 ? `Not answered: that is not the write token (${why}).` : `Not answered: ${why}`;
    status.dataset.outcome = String(resp.status);
  } catch (e) {
    status.textContent = `Not answered: cannot reach the octel server (${e.message}).`;
  }
  for (const b of buttons) b.disabled = false;
}

export function answerForm(s) {
  const key = s.ask.request_id || s.session_id;
  if (forms.has(key)) return forms.get(key);
  const status = el("p.ask-status", { role: "status", "aria-live": "polite" });
  const input = el("input", { id: "ask-token", type: "password", autocomplete: "off", oninput: (e) => (token = e.target.value) });
  input.value = token;
  const buttons = [];
  const button = (decision, text) =>
    el(`button.ask-${decision}`, { type: "button", id: `ask-${decision}`, onclick: () => reply(s.session_id, decision, status, buttons) }, text);
  buttons.push(button("allow", "Allow once"), button("reject", "Reject"));
  const form = el(
    "div.ask-answer",
    { dataset: { request: key } },
    el("label", { for: "ask-token" }, "Write token"),
    input,
    buttons,
    status,
  );
  forms.set(key, form);
  return form;
}
