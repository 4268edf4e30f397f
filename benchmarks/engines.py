"""What the benchmarks that compare SQLite with a real PostgreSQL share: fresh databases on
each engine (PostgreSQL left out, saying why, where it is not installed) and the report, a line
a result as each comes, or all of them as JSON at the end."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pgserver
from sqlalchemy import text

__all__ = ["cpu_clock", "fresh_databases", "per_engine", "settle"]

Result = dict[str, Any]


def fresh_databases(engine: str, tmp: Path, stack: ExitStack) -> Callable[[], str] | None:
    """A maker of fresh, empty databases on ``engine`` (None: no PostgreSQL here). The
    PostgreSQL server is durable, as a fleet runs it, and lives as long as ``stack``."""
    if engine == "postgres":
        if pgserver.pg_binaries() is None:
            print("skipping postgres: " + pgserver.HOW, file=sys.stderr)
            return None
        server = stack.enter_context(pgserver.postgres_server(durable=True))
        return lambda: pgserver.create_database(server)
    made = iter(range(1_000_000))
    return lambda: f"sqlite:///{tmp / f'octel-{next(made)}.db'}"


def per_engine(
    engines: str,
    prefix: str,
    run: Callable[[str, Callable[[], str], Path], Iterable[Result]],
    line: Callable[[Result], str],
    *,
    as_json: bool,
) -> int:
    """``run(engine, new_database_url, tmp)`` for each of the comma-separated ``engines`` there
    is here, in one temporary folder; each result is printed as ``line`` says when it comes (a
    run takes a while), or all as JSON at the end. The exit status of the benchmark."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp, ExitStack() as stack:
        for name in engines.split(","):
            new_url = fresh_databases(name, Path(tmp), stack)
            if new_url is None:
                continue
            for r in run(name, new_url, Path(tmp)):
                results.append(r)
                if not as_json:
                    print(line(r), flush=True)
    if as_json:
        print(json.dumps(results, indent=2))
    return 0


def cpu_clock(engine: Any) -> Callable[[], float]:
    """CPU seconds spent so far by this process and, on PostgreSQL, by every process of the
    server (its postmaster's children, those gone included): on a host shared with other
    work, the cost of a way measured apart from the time others took the cores."""
    if engine.dialect.name != "postgresql":
        return time.process_time
    with engine.connect() as c:
        backend = int(c.execute(text("SELECT pg_backend_pid()")).scalar_one())
    postmaster = _stat(backend)[1]
    tick = os.sysconf("SC_CLK_TCK")

    def server() -> float:
        total = sum(_stat(postmaster)[4:6])  # cutime, cstime: children that ended
        for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
            with suppress(OSError, ValueError, IndexError):
                st = _stat(pid)
                if st[1] == postmaster:
                    total += st[2] + st[3]
        return total / tick

    return lambda: time.process_time() + server()


def _stat(pid: int) -> tuple[int, ...]:
    """(pid, ppid, utime, stime, cutime, cstime) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (pid, int(fields[1]), *(int(fields[i]) for i in (11, 12, 13, 14)))


_GIN = text(
    "SELECT gin_clean_pending_list(c.oid::regclass) FROM pg_class c "
    "JOIN pg_am a ON a.oid = c.relam WHERE c.relkind = 'i' AND a.amname = 'gin'"
)


def settle(engine: Any) -> None:
    """PostgreSQL: move every GIN index's pending entries into the index now, as the vacuum
    would later (a GIN insert appends to a pending list; the index's real work is this), so a
    measured step pays for its own entries, not for those of the step before it. SQLite: none."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as c:
            c.execute(_GIN).all()
