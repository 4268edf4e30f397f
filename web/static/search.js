// What the agents said and ran: the hits of the search box in every archived part's text
// (GET /api/search), each with its snippet, the matches marked, opening the session at its turn.
// The snippet is text: each piece goes in as a text node (el), never as HTML.

import { clear, el, errorBox, getJSON, timeEl } from "./util.js";

function marked(hit) {
  const out = [];
  let at = 0;
  for (const { start, end } of hit.highlights) {
    if (start > at) out.push(hit.snippet.slice(at, start));
    out.push(el("mark", {}, hit.snippet.slice(start, end)));
    at = end;
  }
  out.push(hit.snippet.slice(at));
  return out;
}

function hitRow(hit) {
  const href = `#/session/${encodeURIComponent(hit.session_id)}?offset=${hit.turn}`;
  const what = hit.tool ? `${hit.kind} · ${hit.tool}` : hit.kind;
  return el(
    "li.hit",
    { dataset: { session: hit.session_id, turn: String(hit.turn) } },
    el("a", { href }, hit.title || hit.session_id),
    el("span.muted", {}, ` turn ${hit.turn} · ${what} `),
    hit.at ? timeEl(hit.at) : null,
    el("p.snippet", {}, marked(hit)),
  );
}

export async function drawSearch(node, q, since) {
  if (!q) {
    clear(node);
    return;
  }
  let page;
  try {
    page = await getJSON("/api/search", { q, since, limit: 20 });
  } catch (e) {
    clear(node, errorBox(e));
    return;
  }
  const jump = page.jump
    ? el("p", { id: "search-jump" }, `This ${page.jump.matched} id names `, el("a", { href: `#/session/${encodeURIComponent(page.jump.session_id)}` }, page.jump.session_id))
    : null;
  const body = page.hits.length ? el("ol.hits", {}, page.hits.map(hitRow)) : el("p.muted", {}, "Nothing any agent said or ran holds this.");
  const more = page.next_cursor ? el("p.muted", {}, "More: octel search, or narrow the words.") : null;
  // the index catches up after archiving: say when some sessions are not in it yet
  const behind = page.pending_sessions
    ? el("p.muted", { id: "search-pending" }, `${page.pending_sessions} session${page.pending_sessions === 1 ? "" : "s"} not indexed yet (since `, timeEl(page.pending_since), ").")
    : null;
  clear(node, el("h2", {}, "In conversations"), jump, body, more, behind);
}
