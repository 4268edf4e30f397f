// Spend over time: a bar per day, stacked by agent or model, as plain SVG built with the DOM
// (no chart library, nothing from another origin). The numbers come from /api/costs `daily`.

import { el, usd } from "./util.js";

const NS = "http://www.w3.org/2000/svg";
const COLOURS = 6; // .c0 … .c5; the rest share .c6
const H = 180;
const PAD = { left: 52, right: 8, top: 8, bottom: 22 };

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// `width`: the pixels the chart will have (its box's width), so text is never stretched.
export function spendChart(daily, width) {
  const W = Math.max(280, Math.round(width || 720) - 22);
  if (!daily || !daily.days.length) return el("p.muted", { id: "spend-chart-empty" }, "No spend in this window.");
  const days = daily.days;
  const top = Math.max(...daily.day_totals, 1e-9);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / days.length;
  const barW = Math.max(2, Math.min(40, slot * 0.7));
  const y = (v) => PAD.top + plotH - (v / top) * plotH;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "spend-chart-title" });
  root.append(svg("title", { id: "spend-chart-title" }, `Spend per day, stacked by ${daily.stack}`));
  for (const frac of [0, 0.5, 1]) {
    root.append(svg("text", { class: "axis", x: PAD.left - 4, y: y(top * frac) + 3, "text-anchor": "end" }, usd(top * frac)));
    root.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(top * frac), y2: y(top * frac), stroke: "currentColor", "stroke-opacity": 0.15 }));
  }
  days.forEach((day, i) => {
    const x = PAD.left + i * slot + (slot - barW) / 2;
    let base = 0;
    daily.series.forEach((s, k) => {
      const v = s.cost_usd[i];
      if (!v) return;
      const rect = svg("rect", { class: `spend c${Math.min(k, COLOURS)}`, x, y: y(base + v), width: barW, height: Math.max(0.5, y(base) - y(base + v)), "data-day": day });
      rect.append(svg("title", {}, `${day} · ${s.key ?? "(none)"}: ${usd(v)}`));
      root.append(rect);
      base += v;
    });
    const every = Math.ceil(days.length / 8);
    if (i % every === 0) root.append(svg("text", { class: "axis", x: x + barW / 2, y: H - 6, "text-anchor": "middle" }, day.slice(5)));
  });
  const legend = el(
    "ul.legend",
    {},
    daily.series.map((s, k) => el("li", {}, el(`span.sw.c${Math.min(k, COLOURS)}`, { "aria-hidden": "true" }), `${s.key ?? "(none)"} ${usd(s.cost_usd.reduce((a, b) => a + b, 0))}`)),
  );
  return el("figure.chart", { id: "spend-chart" }, root, el("figcaption", {}, `Spend per day (UTC), stacked by ${daily.stack}`), legend);
}
