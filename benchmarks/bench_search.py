"""Text search pages: index first or walk then index, against the plain query, in one run.

For each text (common, rare, absent, with and without another filter) it times, interleaved so
both see the same load, the page `list_sessions` returns and the plain query it replaces (every
filter and the text in one statement, ORDER BY archived_at DESC, id DESC, LIMIT; on SQLite its
text match through FTS5 as before), checks both give the same sessions, and prints p50/p95 of
each and the ratio. Run it against a fleet-size store (`bench_console.py` loads one):

    python benchmarks/bench_search.py URL [--n 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from telemetry.queries.session_search import contains_text
from telemetry.queries.sessions import SessionFilter, list_sessions
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

CASES = {  # frequencies in bench_console's store
    "two words in a row (1 in 130)": {"q": "parser refactor"},
    "one common word (1 in 5)": {"q": "parser"},
    "rare label (1 in 5,400)": {"q": "flaky-42"},
    "three common words in a row (1 in 4,200)": {"q": "crash timeout memory"},
    "two words + agent": {"q": "parser refactor", "agent": "docs"},
    "no match": {"q": "no-such-words"},
}


def _plain(db: Session, f: SessionFilter) -> list[str]:
    q = f.q or ""
    if db.get_bind().dialect.name == "sqlite" and len(q) >= 3:
        match: Any = text(
            "session_index.id IN (SELECT rowid FROM session_search WHERE session_search MATCH :p)"
        ).bindparams(p='"' + q.replace('"', '""') + '"')
    else:
        match = contains_text(q)
    stmt = select(SessionIndex).where(match)
    if f.agent is not None:
        stmt = stmt.where(SessionIndex.agent == f.agent)
    order = (col(SessionIndex.archived_at).desc(), col(SessionIndex.id).desc())
    return [r.session_id for r in db.exec(stmt.order_by(*order).limit(f.limit)).all()]


def _new(db: Session, f: SessionFilter) -> list[str]:
    return [r.session_id for r in list_sessions(db, f).items]


def _stats(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"p50_ms": statistics.median(samples), "p95_ms": samples[int(0.95 * (len(samples) - 1))]}


def run(url: str, n: int) -> dict[str, Any]:
    engine = make_engine(url)
    out: dict[str, Any] = {"engine": engine.dialect.name, "n": n, "load_average": os.getloadavg()}
    results = {}
    with session_scope(engine, write=False) as db:
        for name, kw in CASES.items():
            f = SessionFilter(limit=50, **kw)
            fns: dict[str, Callable[[], list[str]]] = {
                "plain": lambda f=f: _plain(db, f),
                "new": lambda f=f: _new(db, f),
            }
            same = fns["plain"]() == fns["new"]()
            times: dict[str, list[float]] = {"plain": [], "new": []}
            for _ in range(n):
                for k, fn in fns.items():
                    t = time.perf_counter()
                    fn()
                    times[k].append((time.perf_counter() - t) * 1000)
            r = {k: _stats(v) for k, v in times.items()}
            results[name] = {
                **r,
                "same_sessions": same,
                "p95_ratio": r["new"]["p95_ms"] / r["plain"]["p95_ms"],
            }
    engine.dispose()
    out["results"] = results
    out["load_average_after"] = os.getloadavg()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = run(args.url, args.n)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['engine']}  n={out['n']}  load average {out['load_average']}")
    print(f"{'text':42} {'plain p50/p95 ms':>18} {'new p50/p95 ms':>16} {'new/plain p95':>14}  same")
    for name, r in out["results"].items():
        p, w = r["plain"], r["new"]
        print(
            f"{name:42} {p['p50_ms']:8.1f} {p['p95_ms']:8.1f} {w['p50_ms']:7.1f} {w['p95_ms']:7.1f} "
            f"{r['p95_ratio']:13.2f}x  {r['same_sessions']}"
        )
    print(f"load average after {out['load_average_after']}")


if __name__ == "__main__":
    main()
