"""Import the cycle tables of the older dispatchers from their SQLite files.

Tables and drivers: `dispatch_review_cycles` → review, `dispatch_implementer_cycles` →
implementer, `conflict_drive_cycles` → conflict. Columns are found by name (`cycle_id` or `id`,
`started_at`, `ended_at`, `candidates`/`candidates_count`, …); times may be ISO 8601 text or
epoch seconds or milliseconds. Every row goes through the same begin/finish path as a live
dispatcher (`telemetry.services.ingest.ingest`), with the source row kept in the cycle's raw JSON, so:

- a re-run changes nothing (a cycle already stored is left alone);
- a cycle that was in flight at the last import and has ended since is finished now;
- the write-time counters move exactly once per finished cycle.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, select

from archiver.redact import Redactor
from telemetry.services.ingest.ingest import ConflictError, CycleBegin, CycleFinish, begin_cycle, finish_cycle
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle

__all__ = [
    "TABLES",
    "DispatchImportError",
    "DispatchReport",
    "DispatchTotals",
    "Reject",
    "SourceValue",
    "TableReport",
    "count_rows",
    "import_dispatch_db",
    "parse_dispatch_time",
]

TABLES = {
    "dispatch_review_cycles": "review",
    "dispatch_implementer_cycles": "implementer",
    "conflict_drive_cycles": "conflict",
}
_ALIASES = {
    "candidates_count": ("candidates_count", "candidates"),
    "claims_count": ("claims_count", "claims"),
    "swept_count": ("swept_count", "swept"),
    "processed_count": ("processed_count", "processed"),
    "escalated_count": ("escalated_count", "escalated"),
    "worker_wallclock_seconds": ("worker_wallclock_seconds", "worker_wallclock_s", "wallclock_seconds"),
}
_BATCH = 500
_MAX_REJECTS = 50

Progress = Callable[[str, int], None]  # (table, rows done in this step)


class DispatchImportError(ValueError):
    """The file is missing, not SQLite, or holds none of the dispatcher tables."""


class DispatchTotals(TypedDict):
    """Rows read, and what became of them."""

    rows: int
    imported: int  # new cycles
    finished: int  # stored in flight before, finished now
    unchanged: int
    rejected: int


class TableReport(DispatchTotals):
    """One dispatcher table's rows (its keys in the report: table, driver, then the counts)."""

    table: str
    driver: str


SourceValue = str | int | float | bytes | None  # a value of a SQLite column
_Outcome = Literal["imported", "finished", "unchanged"]


class Reject(TypedDict):
    """A row that was not imported, and why."""

    table: str
    row: SourceValue  # its cycle_id, else its id
    reason: str


class DispatchReport(TypedDict):
    """What `import_dispatch_db` did (`octel import dispatch --json` prints it)."""

    source: str
    tables: list[TableReport]
    totals: DispatchTotals
    rejects: list[Reject]


def _totals(tables: list[TableReport]) -> DispatchTotals:
    def total(k: Literal["rows", "imported", "finished", "unchanged", "rejected"]) -> int:
        return sum(t[k] for t in tables)

    return DispatchTotals(
        rows=total("rows"),
        imported=total("imported"),
        finished=total("finished"),
        unchanged=total("unchanged"),
        rejected=total("rejected"),
    )


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise DispatchImportError(f"no such file {str(path)!r}")
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise DispatchImportError(f"{str(path)!r} is not a SQLite database ({e})") from None
    return conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = [t for t in TABLES if t in names]
    if not found:
        raise DispatchImportError(f"none of the dispatcher tables ({', '.join(TABLES)}) is in this database")
    return found


def count_rows(path: Path) -> dict[str, int]:
    """Rows per dispatcher table in the file (for a progress bar's total)."""
    conn = _open(path)
    try:
        return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in _tables(conn)}
    finally:
        conn.close()


def parse_dispatch_time(v: Any) -> datetime | None:
    """ISO text, or epoch seconds / milliseconds; empty, zero and unreadable values are None."""
    if v is None or v == "" or v == 0:
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        try:
            return datetime.fromtimestamp(v / 1000 if v > 1e11 else v, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"time {v!r} is out of range") from None
    text = str(v).strip()
    try:
        return parse_dispatch_time(float(text))
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"unreadable time {text!r}") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _pick(row: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for n in names:
        if n in row and row[n] is not None and row[n] != "":
            return row[n]
    return None


def _text(v: Any) -> str | None:
    return None if v is None or str(v).strip() == "" else str(v).strip()


def _whole(v: Any) -> Any:
    """A count as a dispatcher's table may hold it (4.0 in a REAL column, "4" as text) as an
    int; anything else is left for validation to refuse."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():
        return int(v.strip())
    return v


def _keepable(v: Any) -> Any:
    """A source value as JSON can hold it: bytes as hex, inf and NaN as text."""
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    return v


def _payloads(driver: str, table: str, row: Mapping[str, Any]) -> tuple[CycleBegin, CycleFinish | None]:
    """The begin (and, for an ended cycle, the finish) a live dispatcher would have sent."""
    if row.get("cycle_id") not in (None, ""):
        cycle_id = str(row["cycle_id"])
    elif row.get("id") is not None:
        cycle_id = f"{driver}-{row['id']}"
    else:
        raise ValueError("row has neither cycle_id nor id")
    started, ended = parse_dispatch_time(row.get("started_at")), parse_dispatch_time(row.get("ended_at"))
    wall = _pick(row, _ALIASES["worker_wallclock_seconds"])
    wall = float(wall) if wall is not None else None
    if wall is not None and not math.isfinite(wall):
        raise ValueError(f"worker_wallclock_seconds {wall!r} is not a finite number")
    state = _text(row.get("terminal_state"))
    try:
        if started is None:
            if ended is None:
                raise ValueError("row has no started_at")
            started = ended - timedelta(seconds=wall or 0)
        if ended is None and state is not None:  # a layout that closed cycles without ended_at
            ended = started + timedelta(seconds=wall or 0)
    except OverflowError:
        raise ValueError(f"worker_wallclock_seconds {wall!r} reaches past the years 1 to 9999") from None
    counts = {k: _whole(_pick(row, n)) for k, n in _ALIASES.items() if k != "worker_wallclock_seconds"}
    kept = {k: _keepable(v) for k, v in row.items()}
    meta = {"imported_from": table, "row": kept}
    begin = CycleBegin(
        cycle_id=cycle_id,
        driver=driver,
        started_at=started,
        host=_text(row.get("host")),
        pid=_whole(row.get("pid")) or None,
        session_id=_text(row.get("session_id")),
        meta=meta,
        **{k: counts[k] for k in ("candidates_count", "claims_count", "swept_count")},
    )
    if ended is None:
        return begin, None
    finish = CycleFinish(
        cycle_id=cycle_id,
        driver=driver,
        started_at=started,
        ended_at=ended,
        terminal_state=state or "unknown",
        worker_outcome=_text(row.get("worker_outcome")),
        error_kind=_text(row.get("error_kind")),
        session_id=_text(row.get("session_id")),
        worker_wallclock_seconds=wall,
        meta=meta,
        **counts,
    )
    return begin, finish


def _apply(
    db: Session, begin: CycleBegin, finish: CycleFinish | None, now: datetime, redactor: Redactor
) -> _Outcome:
    existing = db.exec(select(Cycle).where(Cycle.cycle_id == begin.cycle_id)).first()
    if existing is None:
        begin_cycle(db, begin, now, redactor=redactor)
        if finish is not None:
            finish_cycle(db, finish, now, redactor=redactor)
        return "imported"
    if existing.driver != begin.driver:
        raise ConflictError(f"cycle_id {begin.cycle_id!r} is stored for driver {existing.driver!r}")
    if existing.ended_at is None and finish is not None:
        finish_cycle(db, finish, now, redactor=redactor)
        return "finished"
    return "unchanged"


def _batches(conn: sqlite3.Connection, table: str) -> Iterator[list[dict[str, SourceValue]]]:
    cur = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
    while rows := cur.fetchmany(_BATCH):
        yield [dict(r) for r in rows]


def import_dispatch_db(
    engine: Engine, path: Path, now: datetime, redactor: Redactor, progress: Progress | None = None
) -> DispatchReport:
    """Import every dispatcher table in `path`; one transaction per batch of rows, one savepoint
    per row, so a bad row is reported and skipped and the rest of its batch is stored."""
    conn = _open(path)
    tables: list[TableReport] = []
    rejects: list[Reject] = []
    try:
        for table in _tables(conn):
            tr = TableReport(
                table=table, driver=TABLES[table], rows=0, imported=0, finished=0, unchanged=0, rejected=0
            )
            tables.append(tr)
            for batch in _batches(conn, table):
                with session_scope(engine) as db:
                    for row in batch:
                        tr["rows"] += 1
                        try:
                            begin, finish = _payloads(tr["driver"], table, row)
                            with db.begin_nested():
                                outcome = _apply(db, begin, finish, now, redactor)
                        # ValidationError and ConflictError are ValueErrors; the store's own
                        # refusal (a value PostgreSQL cannot hold) is the row's fault too
                        except (ValueError, OverflowError, TypeError, SQLAlchemyError) as e:
                            tr["rejected"] += 1
                            if len(rejects) < _MAX_REJECTS:
                                rejects.append(
                                    {
                                        "table": table,
                                        "row": row.get("cycle_id") or row.get("id"),
                                        "reason": _why(e),
                                    }
                                )
                            continue
                        tr[outcome] += 1
                if progress is not None:
                    progress(table, len(batch))
    finally:
        conn.close()
    return DispatchReport(source=str(path), tables=tables, totals=_totals(tables), rejects=rejects)


def _why(e: Exception) -> str:
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    if isinstance(e, SQLAlchemyError):
        return "the store refused the row: " + str(getattr(e, "orig", None) or e).splitlines()[0]
    return str(e)
