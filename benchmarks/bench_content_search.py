"""Content search benchmark: what indexing adds to archiving, first pages of a search at scale,
and the index's size, on SQLite and a real PostgreSQL in one run.

1. Archiving: one generated tree (`archive_setup`), `--rounds` times each way, alternated, at
   two stages. "whole" is what `octel archive` pays: the tree walked from the in-process fake
   server, its documents built (scored), redacted, put, stored with their index rows in one
   transaction, read back. "write" is that last part alone, from documents built once (the
   figure this benchmark gave before; kept, labelled, because it is the index's share of the
   part of archiving it touches, and the harder ratio). The whole is the baseline the target
   is about: an operator pays for walking and building too, and with the write stage alone as
   the baseline a cost the same in absolute terms reads as about twice the ratio. The ways:
   with no index at all (the queue switched off: the baseline), with the search queue (what
   archiving does: the writer queues the sessions, `search_pending`), queued then caught up at
   once (the catch-up's work, which `octel serve` / `octel watch` do later in the background;
   what archiving costs with `search_catchup_seconds` 0), and the same tree again over its own
   parts (a tree archived again: its parts replaced). Each way archives a tree of its own
   into the store the earlier ways grew, as a store grows (an index emptied between ways left
   FTS5 its deleted rows to merge away in the next way's write), and pays for the garbage it
   leaves and no other (`own_garbage`).
   Ratios of the medians to "no index" at the same stage, of the time taken and (`cpu_`) of the
   CPU spent by this process and the PostgreSQL server's processes, which other work on a
   shared host disturbs far less than the time.
2. Searching: `--parts` parts of about 30 words (`--sessions-of` parts a session), bulk-loaded
   (SQLite: rows, then the FTS5 table rebuilt once; PostgreSQL: COPY, then the GIN index built
   once), then through the app (Starlette's TestClient, HTTP and JSON included) the first page
   (50 hits) of `GET /api/search` for a rare word (1 part in 50,000), a common word (1 in 5), a
   phrase (1 in 1,000) and a prefix, each `--n` times, p50 and p95, and `GET /api/health` in
   the same run as the baseline (`x health` is the p95 ratio).
3. Size: the table and its text index, per million parts.

Targets (at 10,000,000 parts): rare and common word p95 < 150 ms, phrase < 300 ms, archiving
+ 30 % at most. Run:

    python benchmarks/bench_content_search.py [--parts 1000000] [--n 30] [--engines sqlite,postgres]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_setup import archive_documents, archive_whole, migrated, own_garbage, redactor, tree_documents
from bench_archiver import make_tree
from engines import Result, cpu_clock, per_engine, settle
from fastapi.testclient import TestClient

from archiver.store import FolderStore
from telemetry.services.index.search_catchup import catch_up
from telemetry.settings import Settings
from web.app import create_app

CASES = {
    "rare word (1 in 50,000)": "ECONNRESET",
    "common word (1 in 5)": "timeout",
    "phrase (1 in 1,000)": '"push --force"',
    "prefix (1 in 5)": "timeo*",
}
_POOL = 20_011  # distinct word bodies, cycled (a prime: the markers fall on every body)


def _pool(words: int) -> list[str]:
    rng = random.Random(34)
    return [" ".join(f"w{int(rng.paretovariate(1.2)) % 5000}" for _ in range(words)) for _ in range(_POOL)]


def _body(pool: list[str], i: int) -> str:
    body = pool[i % _POOL]
    if i % 5 == 0:
        body += " timeout"
    if i % 1000 == 7:
        body = "git push --force " + body
    if i % 50_000 == 11:
        body += " read ECONNRESET:"
    return body


def _rows(parts: int, per: int, words: int) -> Iterator[tuple[int, str, int, str]]:
    pool = _pool(words)
    for i in range(parts):
        yield i + 1, f"ses_{i // per:08d}", i % per, _body(pool, i)


def _load(url: str, parts: int, per: int, words: int) -> float:
    t0 = time.perf_counter()
    with migrated(url) as engine:
        if engine.dialect.name == "postgresql":
            _load_pg(engine, parts, per, words)
        else:
            _load_sqlite(engine, parts, per, words)
    return time.perf_counter() - t0


def _load_sqlite(engine: Any, parts: int, per: int, words: int) -> None:
    raw = engine.raw_connection()
    try:
        c = raw.cursor()
        batch: list[tuple[int, str, int, str]] = []
        sql = (
            "INSERT INTO search_part (id, session_id, message_index, part_index, kind, body) "
            "VALUES (?, ?, ?, 0, 'text', ?)"
        )
        for row in _rows(parts, per, words):
            batch.append(row)
            if len(batch) == 100_000:
                c.executemany(sql, batch)
                raw.commit()
                batch = []
        c.executemany(sql, batch)
        c.execute("INSERT INTO session_search_parts(session_search_parts) VALUES ('rebuild')")
        c.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()


def _load_pg(engine: Any, parts: int, per: int, words: int) -> None:
    raw = engine.raw_connection()
    try:
        c = raw.cursor()
        c.execute("DROP INDEX IF EXISTS ix_search_part_body_trgm")
        with c.copy(
            "COPY search_part (id, session_id, message_index, part_index, kind, body) FROM STDIN"
        ) as cp:
            for pid, sid, mi, body in _rows(parts, per, words):
                cp.write_row((pid, sid, mi, 0, "text", body))
        raw.commit()
        c.execute("SET maintenance_work_mem = '512MB'")
        c.execute("CREATE INDEX ix_search_part_body_trgm ON search_part USING gin (lower(body) gin_trgm_ops)")
        c.execute(f"SELECT setval(pg_get_serial_sequence('search_part', 'id'), {parts + 1})")
        c.execute("ANALYZE search_part")
        raw.commit()
    finally:
        raw.close()


def _size(url: str) -> int:
    with migrated(url) as engine, engine.connect() as c:
        if engine.dialect.name == "postgresql":
            return int(c.execute(text("SELECT pg_total_relation_size('search_part')")).scalar_one())
        try:
            q = (
                "SELECT sum(pgsize) FROM dbstat "
                "WHERE name LIKE 'search_part%' OR name LIKE 'session_search_parts%' "
                "OR name LIKE 'ix_search_part%' OR name LIKE 'sqlite_autoindex_search_part%'"
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


def _searches(url: str, data: Path, n: int) -> dict[str, Any]:
    settings = Settings(
        data_dir=data,
        database_url=url,
        ingest_token="bench-token-0123456789",  # type: ignore[arg-type]
        search_catchup_seconds=0,
        _env_file=None,  # type: ignore[call-arg]
    )
    timings: dict[str, list[float]] = {k: [] for k in ["health", *CASES]}
    hits: dict[str, int] = {}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:

        def get(path: str, **params: str) -> Any:
            r = client.get(path, params=params)
            if r.status_code != 200:
                raise SystemExit(f"{path} {params}: HTTP {r.status_code} {r.text[:200]}")
            return r.json()

        for _ in range(3):  # warm caches and the connection pool
            get("/api/health")
            for q in CASES.values():
                get("/api/search", q=q)
        for _ in range(n):
            t0 = time.perf_counter()
            get("/api/health")
            timings["health"].append(time.perf_counter() - t0)
            for name, q in CASES.items():
                t0 = time.perf_counter()
                hits[name] = len(get("/api/search", q=q)["hits"])
                timings[name].append(time.perf_counter() - t0)
    out = {name: _stats(samples) for name, samples in timings.items()}
    base = out["health"]["p95_ms"]
    for name in CASES:
        out[name] |= {"hits": hits[name], "x_health": round(out[name]["p95_ms"] / base, 1)}
    return out


_WAYS = ("none", "queued", "caught_up", "again")


def _archiving(new_url: Callable[[], str], work: Path, rounds: int) -> dict[str, float]:
    red = redactor()

    def whole(tag: str) -> Callable[[FolderStore, Any], object]:
        fake = make_tree(40, 100, tag)
        return lambda store, engine: archive_whole(fake, store, engine, red, f"ses_{tag}root")

    def write(tag: str) -> Callable[[FolderStore, Any], object]:
        docs = tree_documents(40, 100, tag)
        return lambda store, engine: archive_documents(docs, store, engine, red)

    stages = {"whole": whole, "write": write}  # each makes its tree untimed, then archives it
    times: dict[tuple[str, str], list[float]] = {(stage, way): [] for stage in stages for way in _WAYS}
    cpu: dict[tuple[str, str], list[float]] = {k: [] for k in times}
    with migrated(new_url()) as engine:
        clock = cpu_clock(engine)
        for r in range(rounds):
            for (stage, way), samples in times.items():
                # a tree of its own each way (the "again" way: the one just caught up), added to
                # the index the earlier ways grew, as a store grows: never an index emptied,
                # whose deleted rows FTS5 would merge away in the next way's write
                store = FolderStore(work / f"a{r}{stage}{way}")
                with engine.begin() as c:
                    c.execute(text("DELETE FROM search_pending"))
                if way != "again":  # which archives the tree the way before it caught up
                    run = stages[stage](f"{r}{stage}{way}_")
                off = (
                    mock.patch("telemetry.services.index.indexing.enqueue")
                    if way == "none"
                    else nullcontext()
                )
                with off, own_garbage():
                    t0, c0 = time.perf_counter(), clock()
                    run(store, engine)
                    if way in ("caught_up", "again"):
                        catch_up(engine, store, red)
                    settle(engine)  # its GIN entries' work, in its time
                    gc.collect()  # and the garbage it left
                    samples.append(time.perf_counter() - t0)
                    cpu[stage, way].append(clock() - c0)
    out: dict[str, float] = {}
    for kind, measured in (("", times), ("cpu_", cpu)):
        med = {k: statistics.median(v) for k, v in measured.items()}
        for stage in stages:
            base = med[stage, "none"]
            out[f"{kind}{stage}_none_ms"] = round(base * 1e3, 1)
            for way in _WAYS[1:]:
                out[f"{kind}{stage}_{way}_ms"] = round(med[stage, way] * 1e3, 1)
                out[f"{kind}{stage}_{way}_x"] = round(med[stage, way] / base, 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--parts", type=int, default=1_000_000)
    ap.add_argument("--sessions-of", type=int, default=100, help="parts a session")
    ap.add_argument("--words", type=int, default=30)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--skip-archiving", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    def run(name: str, new_url: Callable[[], str], tmp: Path) -> Iterator[Result]:
        work = tmp / name
        work.mkdir()
        if not args.skip_archiving:
            yield {"engine": name, "what": "archiving", **_archiving(new_url, work, args.rounds)}
        url = new_url()
        load_s = _load(url, args.parts, args.sessions_of, args.words)
        size = _size(url)
        yield {
            "engine": name,
            "what": "size",
            "parts": args.parts,
            "sessions": -(-args.parts // args.sessions_of),
            "load_s": round(load_s, 1),
            "mb_per_million_parts": round(size / args.parts * 1e6 / 2**20, 1),
        }
        for case, r in _searches(url, work / "data", args.n).items():
            yield {"engine": name, "what": case, "parts": args.parts, **r}

    def said(r: Result) -> str:
        rest = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("engine", "what"))
        return f"{r['engine']:9} {r['what']}: {rest}"

    return per_engine(args.engines, "octel-bench-content-", run, said, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
