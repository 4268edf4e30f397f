// What a screen reader is told without asking: a daemon that goes down and a session that
// newly turns out stuck, once each (never the clock). The first look only learns what is
// already known; later looks announce what changed since.

import { getJSON } from "./util.js";

export function watchFleet(region) {
  let down = null; // "driver on host" keys seen down
  let stuck = null; // session ids seen stuck
  const say = (text) => {
    // A fresh node, so the same sentence twice is still read twice.
    region.replaceChildren(Object.assign(document.createElement("p"), { textContent: text }));
  };
  return {
    async check() {
      const [health, page] = await Promise.all([
        getJSON("/api/health"),
        getJSON("/api/sessions", { verdict: "stuck", since: "7d", limit: 20 }),
      ]);
      const nowDown = new Map(health.daemons.filter((d) => d.state === "down").map((d) => [`${d.driver} on ${d.host}`, d]));
      const nowStuck = new Map(page.items.map((s) => [s.session_id, s]));
      const news = [];
      if (down !== null) {
        for (const [key, d] of nowDown) {
          if (!down.has(key)) news.push(`Daemon ${key} is down${d.in_flight_cycle ? `; its cycle ${d.in_flight_cycle.cycle_id} is orphaned` : ""}.`);
        }
      }
      if (stuck !== null) {
        for (const [id, s] of nowStuck) if (!stuck.has(id)) news.push(`New stuck session: ${s.title || id}.`);
      }
      down = new Set(nowDown.keys());
      stuck = new Set(nowStuck.keys());
      if (news.length) say(news.join(" "));
      return news;
    },
  };
}
