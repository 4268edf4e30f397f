"""Content search benchmark: search pages over archived parts, the content index's cost when a
tree is archived, and its size, on SQLite and a real PostgreSQL in one run.

1. Archiving: the documents of one generated tree (`archive_setup`), archived the way
   `octel archive` does it, `--rounds` times with the content index and as many without
   (extracting and writing the parts switched off), alternated; the ratio of the medians, plus
   the one parse of the written bytes the parts are taken from (counted in the overhead).
2. Searching: `--parts` parts of `--words` words each (a vocabulary of 5,000 words) in sessions
   of 100 parts, written through `put_parts` as the archive writer writes them; then the first
   page (50 hits) of a rare word (1 part in 50,000), a common word (1 in 5), a phrase of two
   words (1 in 1,000) and a prefix, each `--n` times, p50 and p95, against a lookup by id in
   the same run (the baseline).
3. Size: the index's bytes (table, text index) per million parts.

Targets (issue 34, at 10,000,000 parts): rare and common word p95 < 150 ms, phrase < 300 ms,
archiving + 30 % at most. Run:

    python benchmarks/bench_content_search.py [--parts 200000] [--n 30] [--engines sqlite,postgres] [--json]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_setup import archive_documents, migrated, redactor, tree_documents
from engines import Result, per_engine

from archiver.archive import serialise
from archiver.content import ContentPart
from archiver.store import FolderStore
from telemetry.queries.content_search import SearchRequest, search
from telemetry.services.content_index import put_parts
from telemetry.store.db import session_scope

CASES = {
    "rare word (1 in 50,000)": "ECONNRESET",
    "common word (1 in 5)": "timeout",
    "phrase (1 in 1,000)": '"push --force"',
    "prefix (1 in 5)": "timeo*",
}
_SESSION = 100  # parts per session


def _body(rng: random.Random, i: int, words: int) -> str:
    body = [f"w{int(rng.paretovariate(1.2)) % 5000}" for _ in range(words)]
    if i % 5 == 0:
        body[rng.randrange(words)] = "timeout"
    if i % 1000 == 7:
        body.insert(rng.randrange(words), "git push --force")
    if i % 50_000 == 11:
        body.insert(rng.randrange(words), "read ECONNRESET:")
    return " ".join(body)


def _load(url: str, parts: int, words: int) -> float:
    rng = random.Random(34)
    t0 = time.perf_counter()
    with migrated(url) as engine:
        for start in range(0, parts, 50 * _SESSION):
            batch: dict[str, list[ContentPart]] = {}
            for i in range(start, min(parts, start + 50 * _SESSION)):
                mine = batch.setdefault(f"ses_{i // _SESSION:08d}", [])
                mine.append(ContentPart(len(mine), 0, "text", None, 1.7e12 + i, _body(rng, i, words)))
            with session_scope(engine) as db:
                put_parts(db, batch)
        if engine.dialect.name == "postgresql":
            with engine.begin() as c:
                c.execute(text("ANALYZE search_part"))
    return time.perf_counter() - t0


def _size(url: str) -> int:
    with migrated(url) as engine, engine.connect() as c:
        if engine.dialect.name == "postgresql":
            return int(c.execute(text("SELECT pg_total_relation_size('search_part')")).scalar_one())
        try:
            q = (
                "SELECT sum(pgsize) FROM dbstat "
                "WHERE name LIKE 'search_part%' OR name LIKE 'session_search_parts%'"
            )
            return int(c.execute(text(q)).scalar_one() or 0)
        except Exception:  # no dbstat in this SQLite: the whole file
            return Path(url.removeprefix("sqlite:///")).stat().st_size


def _stats(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "p50_ms": round(statistics.median(s) * 1e3, 2),
        "p95_ms": round(s[int(0.95 * (len(s) - 1))] * 1e3, 2),
    }


def _searches(url: str, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with migrated(url) as engine:
        timings: dict[str, list[float]] = {k: [] for k in [*CASES, "baseline"]}
        hits: dict[str, int] = {}
        for _ in range(n):
            for name, q in CASES.items():
                with session_scope(engine, write=False) as db:
                    t0 = time.perf_counter()
                    page = search(db, SearchRequest(q=q))
                    timings[name].append(time.perf_counter() - t0)
                    hits[name] = len(page.hits)
            with session_scope(engine, write=False) as db:
                t0 = time.perf_counter()
                db.connection().execute(text("SELECT body FROM search_part WHERE id = 1000")).all()
                timings["baseline"].append(time.perf_counter() - t0)
        for name, samples in timings.items():
            out[name] = {**_stats(samples), **({"hits": hits[name]} if name in hits else {})}
    return out


def _archiving(new_url: Callable[[], str], work: Path, rounds: int) -> dict[str, float]:
    docs = tree_documents(40, 100)
    red = redactor()
    on: list[float] = []
    off: list[float] = []
    with migrated(new_url()) as engine:
        for r in range(rounds):
            for indexed in (True, False):
                store = FolderStore(work / f"a{r}{indexed}")
                with (
                    mock.patch("archiver.record.content_parts", return_value=())
                    if not indexed
                    else _nothing()
                ):
                    t0 = time.perf_counter()
                    archive_documents(docs, store, engine, red)
                    (on if indexed else off).append(time.perf_counter() - t0)
    datas = [serialise(d, red)[0] for d in docs]
    t0 = time.perf_counter()
    for d in datas:
        orjson.loads(d)
    parse = time.perf_counter() - t0
    base = statistics.median(off) - parse
    extra = statistics.median(on) - base
    return {
        "archive_ms": round(base * 1e3, 1),
        "with_index_ms": round((base + extra) * 1e3, 1),
        "ratio": round((base + extra) / base, 3),
    }


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--parts", type=int, default=200_000)
    ap.add_argument("--words", type=int, default=30)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    def run(name: str, new_url: Callable[[], str], tmp: Path) -> Iterator[Result]:
        work = tmp / name
        work.mkdir()
        yield {"engine": name, "what": "archiving", **_archiving(new_url, work, args.rounds)}
        url = new_url()
        load_s = _load(url, args.parts, args.words)
        size = _size(url)
        yield {
            "engine": name,
            "what": "size",
            "parts": args.parts,
            "load_s": round(load_s, 1),
            "mb_per_million_parts": round(size / args.parts * 1e6 / 2**20, 1),
        }
        for case, r in _searches(url, args.n).items():
            yield {"engine": name, "what": case, "parts": args.parts, **r}

    def said(r: Result) -> str:
        rest = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("engine", "what"))
        return f"{r['engine']:9} {r['what']}: {rest}"

    return per_engine(args.engines, "octel-bench-content-", run, said, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
