// The console's entry point: the hash router, auto-refresh, the "server unreachable" banner,
// focus kept across redraws, announcements for screen readers and the keyboard shortcuts.
// Each view module draws itself from the JSON API.

import { ApiError, Unreachable, clear, el, errorBox, hashFor, parseHash } from "./util.js";
import { watchFleet } from "./announce.js";
import * as overview from "./overview.js";
import * as drivers from "./drivers.js";
import * as sessions from "./sessions.js";
import * as session from "./session.js";
import * as costs from "./costs.js";

const VIEWS = { overview, drivers, sessions, session, costs };
const TITLES = { overview: "Overview", drivers: "Drivers", sessions: "Sessions", session: "Session", costs: "Costs" };
const NAV_KEYS = { 1: "overview", 2: "drivers", 3: "sessions", 4: "costs" };

const main = document.getElementById("main");
const banner = document.getElementById("banner");
const updated = document.getElementById("updated");
const autoBox = document.getElementById("auto-refresh");
const refreshMs = Number(document.body.dataset.refreshSeconds || 10) * 1000;

let current = null; // {view, route, handle}
let lastOk = null;
let busy = false;
let again = false;

const ctx = {
  navigate(view, arg, params, { replace = false } = {}) {
    const h = hashFor(view, arg, params);
    if (replace) {
      history.replaceState(null, "", h);
      return;
    }
    if (window.location.hash === h) render(null);
    else window.location.hash = h;
  },
  // Filters changed: keep them in the URL (reload keeps the view) and redraw in place, so the
  // focused input keeps its focus.
  update(params) {
    if (!current) return Promise.resolve();
    const r = current.route;
    const h = hashFor(r.view, r.arg, params);
    history.replaceState(null, "", h);
    r.params = parseHash(h).params;
    return refresh(true);
  },
  // Run a load; a dead server shows the banner, an API error is returned for the view to show.
  async guard(fn) {
    try {
      const out = await fn();
      markOk();
      return out;
    } catch (err) {
      if (err instanceof Unreachable) {
        markDown(err);
        throw err;
      }
      throw err;
    }
  },
};

function markOk() {
  lastOk = new Date();
  banner.hidden = true;
  document.body.classList.remove("offline");
  updated.textContent = `updated ${lastOk.toISOString().slice(11, 19)} UTC`;
}

function markDown(err) {
  const since = lastOk ? ` Showing data from ${lastOk.toISOString().slice(11, 19)} UTC.` : "";
  clear(banner, el("strong", {}, "The octel server is unreachable. "), `${err.message}. Retrying every ${refreshMs / 1000} s.${since}`);
  banner.hidden = false;
  document.body.classList.add("offline");
}

async function render(ev) {
  const route = parseHash(window.location.hash);
  const mod = VIEWS[route.view];
  if (current && current.handle && current.handle.destroy) current.handle.destroy();
  current = null;
  for (const a of document.querySelectorAll("nav a")) {
    const on = a.dataset.view === route.view || (route.view === "session" && a.dataset.view === "sessions");
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!mod) {
    clear(main, el("h1", { tabindex: -1 }, "Not found"), el("p.error", {}, `There is no view called “${route.view}”. `), el("a", { href: "#/overview" }, "Go to the overview"));
    return;
  }
  document.title = `${TITLES[route.view]} · octel`;
  const root = clear(main);
  const handle = mod.mount(root, route, ctx);
  current = { view: route.view, route, handle };
  await refresh(true);
  // A new view (not the first page load): the reader starts at its heading, not at the nav.
  if (ev && current && current.handle === handle) {
    const h1 = main.querySelector("h1");
    if (h1) {
      h1.setAttribute("tabindex", "-1");
      h1.focus();
    }
  }
}

// Focus survives a redraw: remember what had it by something the redraw keeps (an id, a row's
// link, a link's target), and give it back to the new element.
function focusKey(node) {
  if (!node || node === document.body || !main.contains(node)) return null;
  if (node.id) return `#${CSS.escape(node.id)}`;
  const href = node.getAttribute("data-href");
  if (href) return `${node.tagName.toLowerCase()}[data-href="${CSS.escape(href)}"]`;
  const a = node.getAttribute("href");
  if (a) return `${node.tagName.toLowerCase()}[href="${CSS.escape(a)}"]`;
  return null;
}

function restoreFocus(key) {
  if (!key || (document.activeElement && document.activeElement !== document.body && main.contains(document.activeElement))) return;
  const node = main.querySelector(key);
  if (node) node.focus({ preventScroll: true });
}

// One Tab stop per table row: the row opens its target, so the links inside it step aside
// (they still work with a click).
function oneStopPerRow() {
  for (const a of main.querySelectorAll("tr[data-href] a, tr[data-href] button")) a.tabIndex = -1;
}

async function refresh(first) {
  if (!current || !current.handle) return;
  if (!first && !current.handle.autoRefresh) return;
  if (busy) {
    if (first) again = true;
    return;
  }
  busy = true;
  const mine = current;
  const focused = focusKey(document.activeElement);
  try {
    await ctx.guard(() => mine.handle.refresh());
    oneStopPerRow();
    restoreFocus(focused);
  } catch (err) {
    if (!(err instanceof Unreachable) && mine === current) {
      // A view that cannot draw shows why, in place of its content.
      const box = mine.handle.errorSlot || main;
      clear(box, errorBox(err));
      if (!(err instanceof ApiError)) console.warn(err);
    }
  } finally {
    busy = false;
  }
  if (again) {
    again = false;
    await refresh(true);
  }
}

window.addEventListener("hashchange", render);

// The skip link moves the focus to the content; it must not become a route ("#main").
document.querySelector("a.skip").addEventListener("click", (ev) => {
  ev.preventDefault();
  main.focus();
});

const fleet = watchFleet(document.getElementById("announce"));

setInterval(() => {
  if (document.hidden) return;
  if (!autoBox.checked && !document.body.classList.contains("offline")) return;
  refresh(false);
  fleet.check().catch(() => {}); // a dead server is the banner's to say
}, refreshMs);
fleet.check().catch(() => {});

// Keyboard: 1–4 switch views, / focuses the search, r refreshes, j/k walk table rows.
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement) {
    if (ev.key === "Escape") t.blur();
    return;
  }
  if (NAV_KEYS[ev.key]) {
    ctx.navigate(NAV_KEYS[ev.key]);
  } else if (ev.key === "/") {
    const search = main.querySelector("input[type=search]");
    if (search) {
      ev.preventDefault();
      search.focus();
    }
  } else if (ev.key === "r") {
    refresh(true);
  } else if (ev.key === "j" || ev.key === "k") {
    moveRow(ev.key === "j" ? 1 : -1);
  } else {
    return;
  }
});

function moveRow(step) {
  const rows = [...main.querySelectorAll("tr[data-href]")];
  if (!rows.length) return;
  const i = rows.indexOf(document.activeElement);
  const next = rows[Math.min(rows.length - 1, Math.max(0, i < 0 ? 0 : i + step))];
  next.focus();
}

// Rows that open something: click or Enter.
main.addEventListener("click", (ev) => {
  if (ev.target.closest("a, button, input, select, summary, details")) return;
  const row = ev.target.closest("tr[data-href]");
  if (row) window.location.hash = row.dataset.href;
});
main.addEventListener("keydown", (ev) => {
  if (ev.key !== "Enter") return;
  const row = ev.target.closest && ev.target.closest("tr[data-href]");
  if (row && ev.target === row) window.location.hash = row.dataset.href;
});

render(null);
