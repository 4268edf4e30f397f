"""Content search at fleet scale: first pages of a search as the index grows, in stages, up to
10,000,000 parts, with the index's size per million parts and the time each stage took.

The parts are those of `bench_content_search.py` (about 30 words, 100 a session, the same
rare word, common word and phrase), loaded the fastest way each engine has, in stages (say
`--stages 1000000,5000000,10000000`); after each stage the searches of `bench_content_search`
run through the app (p50, p95 and `x health`, the p95 ratio against `GET /api/health` in the
same run), so a run stopped part way has measured every stage it finished.

- SQLite: rows by `executemany` in transactions of 200,000, journal and sync off, the table's
  indexes dropped for the load; then the new rows' text is put in the FTS5 table in one
  statement (as octel's own writer does, migration 0026), with a large in-memory hash
  (`hashsize`) so FTS5 writes few, large segments instead of merging many small ones; the
  indexes are made again.
- PostgreSQL: `COPY`, the GIN index dropped for the load and built again after it.

    python benchmarks/bench_search_scale.py [--stages 1000000,10000000] [--engines sqlite]
        [--keep DIR]   # keep the SQLite file there (a later run can search it again)
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_setup import migrated
from bench_content_search import _rows, _searches, _size
from engines import Result, per_engine

_BATCH = 200_000
_HASH = 1 << 30  # bytes of FTS5's in-memory hash during the load
_SQLITE_INDEXES = {
    "ix_search_part_session": "search_part (session_id, message_index)",
    "ix_search_part_live": "search_part (live_message_id)",
}
_INSERT = (
    "INSERT INTO search_part (id, session_id, message_index, part_index, kind, body) "
    "VALUES (?, ?, ?, 0, 'text', ?)"
)


def _chunks(rows: Iterator[tuple[int, str, int, str]]) -> Iterator[list[tuple[int, str, int, str]]]:
    batch: list[tuple[int, str, int, str]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _stage_sqlite(path: str, rows: Iterator[tuple[int, str, int, str]], first: int) -> None:
    c = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-1000000", "temp_store=MEMORY"):
            c.execute(f"PRAGMA {pragma}")
        for name in _SQLITE_INDEXES:
            c.execute(f"DROP INDEX IF EXISTS {name}")
        for batch in _chunks(rows):
            c.execute("BEGIN")
            c.executemany(_INSERT, batch)
            c.execute("COMMIT")
        c.execute("BEGIN")
        fts = "session_search_parts"
        c.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('hashsize', {_HASH})")
        c.execute(
            "INSERT INTO session_search_parts(rowid, body) SELECT id, body FROM search_part WHERE id >= ?",
            (first,),
        )
        c.execute("DELETE FROM session_search_parts_config WHERE k = 'hashsize'")
        for name, on in _SQLITE_INDEXES.items():
            c.execute(f"CREATE INDEX {name} ON {on}")
        c.execute("COMMIT")
        c.execute("ANALYZE")
        c.execute("PRAGMA journal_mode=WAL")
    finally:
        c.close()


def _stage_pg(engine: Any, rows: Iterator[tuple[int, str, int, str]], last: int) -> None:
    raw = engine.raw_connection()
    try:
        c = raw.cursor()
        c.execute("DROP INDEX IF EXISTS ix_search_part_body_trgm")
        copy = "COPY search_part (id, session_id, message_index, part_index, kind, body) FROM STDIN"
        with c.copy(copy) as cp:
            for pid, sid, mi, body in rows:
                cp.write_row((pid, sid, mi, 0, "text", body))
        raw.commit()
        c.execute("SET maintenance_work_mem = '1GB'")
        c.execute("CREATE INDEX ix_search_part_body_trgm ON search_part USING gin (lower(body) gin_trgm_ops)")
        c.execute(f"SELECT setval(pg_get_serial_sequence('search_part', 'id'), {last + 1})")
        c.execute("ANALYZE search_part")
        raw.commit()
    finally:
        raw.close()


def _stage(url: str, parts: Iterator[tuple[int, str, int, str]], done: int, upto: int) -> None:
    """Load parts `done + 1` to `upto`, the next of the one stream of all parts."""
    rows = islice(parts, upto - done)
    with migrated(url) as engine:
        if engine.dialect.name == "postgresql":
            _stage_pg(engine, rows, upto)
            return
    _stage_sqlite(url.removeprefix("sqlite:///"), rows, done + 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--stages", default="1000000,5000000,10000000")
    ap.add_argument("--sessions-of", type=int, default=100, help="parts a session")
    ap.add_argument("--words", type=int, default=30)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--engines", default="sqlite")
    ap.add_argument("--keep", type=Path, help="a folder to keep the SQLite database in")
    args = ap.parse_args()
    stages = [int(s) for s in args.stages.split(",")]

    def run(name: str, new_url: Callable[[], str], tmp: Path) -> Iterator[Result]:
        work = tmp / name
        work.mkdir()
        url = f"sqlite:///{args.keep / 'octel-scale.db'}" if args.keep and name == "sqlite" else new_url()
        parts = _rows(stages[-1], args.sessions_of, args.words)  # one stream, read stage by stage
        done = 0
        for upto in stages:
            t0 = time.perf_counter()
            _stage(url, parts, done, upto)
            load_s = time.perf_counter() - t0
            size = _size(url)
            yield {
                "engine": name,
                "what": "size",
                "parts": upto,
                "stage_load_s": round(load_s, 1),
                "mb_per_million_parts": round(size / upto * 1e6 / 2**20, 1),
            }
            for case, r in _searches(url, work / f"data{upto}", args.n).items():
                yield {"engine": name, "what": case, "parts": upto, **r}
            done = upto

    def said(r: Result) -> str:
        rest = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("engine", "what"))
        return f"{r['engine']:9} {r['what']}: {rest}"

    return per_engine(args.engines, "octel-bench-scale-", run, said, as_json=False)


if __name__ == "__main__":
    sys.exit(main())
