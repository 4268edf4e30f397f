// A filter bar bound to the URL: every control is a query parameter of the hash, so a reload
// or a shared link shows the same rows. Changes redraw in place (ctx.update).

import { el, paramsObject } from "./util.js";

// fields: [{name, label, type: "search"|"text"|"select", options: [[value, text]], list}]
export function filterBar(route, ctx, fields) {
  const form = el("form.filters", { role: "search", onsubmit: (e) => e.preventDefault() });
  const controls = {};
  let timer = null;
  const apply = () => {
    const params = paramsObject(route.params);
    delete params.cursor; // a new filter starts from the newest row
    for (const f of fields) params[f.name] = controls[f.name].value.trim();
    ctx.update(params);
  };
  for (const f of fields) {
    const id = `f-${f.name}`;
    const value = route.params.get(f.name) || "";
    let input;
    if (f.type === "select") {
      input = el("select", { id, name: f.name, onchange: apply }, f.options.map(([v, t]) => el("option", { value: v }, t)));
      if (value && !f.options.some(([v]) => v === value)) input.append(el("option", { value }, value));
      input.value = value;
    } else {
      input = el("input", {
        id,
        name: f.name,
        type: f.type || "text",
        value,
        placeholder: f.placeholder || "",
        list: f.list ? `${id}-list` : null,
        autocomplete: "off",
        oninput: () => {
          clearTimeout(timer);
          timer = setTimeout(apply, 300);
        },
        onchange: apply,
        onkeydown: (e) => {
          if (e.key === "Enter") {
            clearTimeout(timer);
            apply();
          }
        },
      });
    }
    controls[f.name] = input;
    // label and control stay together when the bar wraps
    form.append(el("span.field", {}, el("label", { for: id }, f.label), input, f.list ? el("datalist", { id: `${id}-list` }) : null));
  }
  const reset = el("button", {
    type: "button",
    onclick: () => {
      for (const f of fields) controls[f.name].value = "";
      apply();
    },
  }, "Clear");
  form.append(reset);
  return {
    form,
    // Offer values seen on the page as suggestions (never fetched separately).
    suggest(name, values) {
      const list = form.querySelector(`#f-${name}-list`);
      if (!list) return;
      const have = new Set([...list.options].map((o) => o.value));
      for (const v of values) if (v && !have.has(v)) { list.append(el("option", { value: v })); have.add(v); }
    },
  };
}

// "Newest" / "Older" buttons for keyset paging; the cursor lives in the URL too.
export function pager(route, ctx, nextCursor) {
  const params = paramsObject(route.params);
  const first = !params.cursor;
  const newest = { ...params };
  delete newest.cursor;
  return el(
    "nav.pager",
    { "aria-label": "Pages" },
    el("button", { type: "button", disabled: first, onclick: () => ctx.update(newest) }, "⇤ Newest"),
    el("button", { type: "button", disabled: !nextCursor, "data-next": "1", onclick: () => ctx.update({ ...params, cursor: nextCursor }) }, "Older →"),
  );
}
