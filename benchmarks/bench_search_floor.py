"""What indexing a tree for search cannot skip, stage by stage, against archiving it, on both
engines in one run.

`bench_content_search.py` measures archiving with the content index caught up against
archiving without it (the target: at most 1.30x). This one asks how close any content index
that keeps octel's promises can come. Over one generated tree (40 sessions x 100 messages,
6,000 parts, 2.4 MB of text), each stage alone, the CPU of this process and of PostgreSQL's
server processes, the median of `--rounds` (each round a tree of its own added to the store,
each stage paying for the garbage it leaves, `own_garbage`):

- archive: the tree archived as `octel archive` does it, with no index (the 1x);
- read: its documents read back from the store and parsed (the text must come from somewhere:
  the catch-up reads it; held in memory from the archive step instead, it costs the archive's
  garbage collector more than this);
- extract: their searchable parts (`content_parts`) as rows;
- rows: the rows written into a table with the content index's columns and indexes, no text
  index (SQLite: the driver's `executemany`; PostgreSQL: `COPY`, the commit not waiting for
  its WAL, as the catch-up writes);
- a text index over the same rows, each the difference to `rows`: the trigram index octel has
  (SQLite: FTS5 `trigram`, `detail=none`; PostgreSQL: pg_trgm's GIN of `lower(body)`) and a
  word index (SQLite: FTS5 `unicode61`, `detail=none`, a prefix index of 2 and 3 characters;
  PostgreSQL: a GIN of `to_tsvector('simple', body)`), which would find words and their
  prefixes only, not any run of characters;
- octel: the catch-up itself (`catch_up`: read, extract, write) into the index the earlier
  rounds grew.

The floor of indexing is rows + a text index + extract, with the read (`floor_*_x`) and
without it (`held_*_x`), each printed as archive + floor over archive, next to the target.

    python benchmarks/bench_search_floor.py [--rounds 7] [--engines sqlite,postgres] [--json]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import col, select

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_setup import archive_whole, migrated, own_garbage, redactor
from bench_archiver import make_tree
from engines import Result, cpu_clock, per_engine, settle

from archiver.content import content_parts
from archiver.store import FolderStore
from telemetry.queries.turns import open_archive
from telemetry.services.index.content_index import enqueue
from telemetry.services.index.search_catchup import catch_up
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

TARGET = 1.30
_COLS = "session_id, message_index, part_index, kind, tool, at, body, live_message_id"
_TABLE = (
    "CREATE TABLE floor_part (id {id} PRIMARY KEY, session_id VARCHAR(200) NOT NULL, "
    "message_index INTEGER NOT NULL, part_index INTEGER NOT NULL, kind VARCHAR(20) NOT NULL, "
    "tool VARCHAR(200), at {at}, body TEXT NOT NULL, live_message_id BIGINT)"
)
_INDEXES = (
    "CREATE INDEX floor_part_session ON floor_part (session_id, message_index)",
    "CREATE INDEX floor_part_live ON floor_part (live_message_id) WHERE live_message_id IS NOT NULL",
)
_FTS = (
    "CREATE VIRTUAL TABLE floor_fts USING fts5(body, content='floor_part', content_rowid='id', "
    "tokenize='{tokenize}', detail=none{more})"
)
# name -> (SQLite's FTS5 tokenizer and options, PostgreSQL's GIN expression); None: rows alone
TEXT_INDEXES: dict[str, tuple[str, str, str] | None] = {
    "rows": None,
    "trigram": ("trigram", "", "gin (lower(body) gin_trgm_ops)"),
    "words": ("unicode61", ", prefix='2 3'", "gin (to_tsvector('simple', body))"),
}
Row = tuple[object, ...]


def _at(ms: float | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000.0, UTC) if ms is not None else None


def _cpu(engine: Engine, clock: Callable[[], float], fn: Callable[[], object]) -> float:
    """The CPU `fn` spends, the collection of the garbage it leaves (`own_garbage`) and its
    GIN entries' work (`settle`) included."""
    with own_garbage():
        c0 = clock()
        fn()
        settle(engine)
        gc.collect()
        return clock() - c0


def _sqlite_write(raw: Any, rows: list[Row], index: tuple[str, str, str] | None) -> Callable[[], None]:
    """Made afresh (untimed); the returned call writes the rows and their text, as octel does."""
    c = raw.cursor()
    for sql in ("DROP TABLE IF EXISTS floor_fts", "DROP TABLE IF EXISTS floor_part"):
        c.execute(sql)
    c.execute(_TABLE.format(id="INTEGER", at="DATETIME"))
    for sql in _INDEXES:
        c.execute(sql)
    if index is not None:
        c.execute(_FTS.format(tokenize=index[0], more=index[1]))
    raw.commit()

    def write() -> None:
        c.execute("BEGIN IMMEDIATE")  # the store's connections leave the driver's transactions off
        values = [(*r[:5], str(r[5]) if r[5] is not None else None, *r[6:]) for r in rows]
        c.executemany(f"INSERT INTO floor_part ({_COLS}) VALUES ({', '.join('?' * 8)})", values)
        if index is not None:
            c.execute("INSERT INTO floor_fts(rowid, body) SELECT id, body FROM floor_part")
        raw.commit()

    return write


def _pg_write(raw: Any, rows: list[Row], index: tuple[str, str, str] | None) -> Callable[[], None]:
    c = raw.cursor()
    c.execute("DROP TABLE IF EXISTS floor_part")
    c.execute(_TABLE.format(id="BIGSERIAL", at="TIMESTAMP WITH TIME ZONE"))
    for sql in _INDEXES:
        c.execute(sql)
    if index is not None:
        c.execute(f"CREATE INDEX floor_part_text ON floor_part USING {index[2]}")
    raw.commit()

    def write() -> None:
        c.execute("SET LOCAL synchronous_commit = off")
        with c.copy(f"COPY floor_part ({_COLS}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        raw.commit()

    return write


def _round(engine: Engine, clock: Callable[[], float], work: Path, tag: str) -> dict[str, float]:
    """One round: a tree of its own (`tag`), archived, then each stage alone; the index
    grows round by round, as a store's does."""
    fake, red, store = make_tree(40, 100, tag), redactor(), FolderStore(work)
    got: dict[str, float] = {}
    root = f"ses_{tag}root"
    with mock.patch("telemetry.services.index.indexing.enqueue"):
        got["archive"] = _cpu(engine, clock, lambda: archive_whole(fake, store, engine, red, root))
    with session_scope(engine) as db:
        mine = col(SessionIndex.session_id).startswith(f"ses_{tag}")
        paths = list(db.exec(select(SessionIndex.session_id, SessionIndex.archive_path).where(mine)).all())
        ids = [sid for sid, _ in paths]
        enqueue(db, ids, redacted=ids)  # as archiving queues them (written redacted by octel)
    docs: list[Any] = []
    got["read"] = _cpu(engine, clock, lambda: docs.extend(open_archive(store, p)[0] for _, p in paths))
    rows: list[Row] = []

    def extract() -> None:
        for (sid, _), doc in zip(paths, docs, strict=True):
            rows.extend(
                (sid, p.message_index, p.part_index, p.kind, p.tool, _at(p.created_ms), p.body, None)
                for p in content_parts(doc)
            )

    got["extract"] = _cpu(engine, clock, extract)
    raw = engine.raw_connection()
    try:
        made = _pg_write if engine.dialect.name == "postgresql" else _sqlite_write
        for name, index in TEXT_INDEXES.items():
            got[name] = _cpu(engine, clock, made(raw.driver_connection, rows, index))
    finally:
        raw.close()
    got["octel"] = _cpu(engine, clock, lambda: catch_up(engine, store, red))
    with engine.connect() as c:
        n = c.execute(text("SELECT count(*) FROM search_part WHERE session_id LIKE :t"), {"t": f"ses_{tag}%"})
        assert n.scalar_one() == len(rows)
    return got


def _measure(new_url: Callable[[], str], work: Path, rounds: int) -> Result:
    samples: dict[str, list[float]] = {}
    with migrated(new_url()) as engine:
        clock = cpu_clock(engine)
        for r in range(rounds):
            for k, v in _round(engine, clock, work / f"r{r}", f"{r}_").items():
                samples.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in samples.items()}
    out: Result = {f"{k}_ms": round(v * 1e3, 1) for k, v in med.items()}
    base = med["archive"]
    for name in ("trigram", "words"):
        out[f"{name}_ms"] = round((med[name] - med["rows"]) * 1e3, 1)  # the text index alone
        held = med["extract"] + med[name]
        out[f"floor_{name}_x"] = round((base + med["read"] + held) / base, 3)
        out[f"held_{name}_x"] = round((base + held) / base, 3)
    out["octel_x"] = round((base + med["octel"]) / base, 3)
    out["target_x"] = TARGET
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    def run(name: str, new_url: Callable[[], str], tmp: Path) -> Iterator[Result]:
        yield {"engine": name, **_measure(new_url, tmp / name, args.rounds)}

    def said(r: Result) -> str:
        return f"{r['engine']:9} " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "engine")

    return per_engine(args.engines, "octel-bench-search-floor-", run, said, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
