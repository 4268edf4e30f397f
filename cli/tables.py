"""Shared pieces of the query commands: time windows, number formats, the store in read mode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from cli.app import fail, open_store, settings_of

# What only some commands use is imported where it is used, so a command pays for its own.
if TYPE_CHECKING:
    from rich.table import Table
    from sqlmodel import Session

    from archiver.store import ArchiveStore

__all__ = [
    "archives_of",
    "dash",
    "money",
    "num",
    "print_page",
    "ratio",
    "read_store",
    "seconds",
    "when",
    "window",
]


def window(since: str | None, until: str | None, now: datetime | None = None) -> tuple[datetime | None, ...]:
    """`--since`/`--until` (24h, 7d or ISO 8601) as times; bad input exits 2 with one sentence."""
    from telemetry.timeutil import since_value, utcnow

    now = now or utcnow()
    out: list[datetime | None] = []
    for flag, text in (("--since", since), ("--until", until)):
        try:
            out.append(since_value(text, now))
        except ValueError as e:
            fail(f"{flag}: {e}", 2)
    if out[0] is not None and out[1] is not None and out[0] >= out[1]:
        fail("--since must be earlier than --until", 2)
    return tuple(out)


def print_page(table: Table, next_cursor: str | None) -> None:
    """One page of a paged list, and how to ask for the next."""
    from cli.app import console

    console.print(table)
    if next_cursor:
        console.print(f"more: --cursor {next_cursor}", highlight=False)


@contextmanager
def read_store(ctx: typer.Context) -> Iterator[Session]:
    """A read transaction on the configured store (upgraded first, so a new store is usable)."""
    from telemetry.store.db import session_scope

    with open_store(settings_of(ctx)) as engine, session_scope(engine, write=False) as db:
        yield db


def archives_of(ctx: typer.Context, db: Session) -> ArchiveStore:
    """The configured archive store (`OCTEL_ARCHIVE_STORE`) of the store `db` reads."""
    from sqlalchemy.engine import Engine

    from telemetry.archive_store import archive_store

    bind = db.get_bind()
    return archive_store(settings_of(ctx), bind if isinstance(bind, Engine) else bind.engine)


def dash(v: Any) -> str:
    """A value for a table cell: "-" when empty; markup in user data (titles, errors) is escaped."""
    if v is None or v == "":
        return "-"
    from rich.markup import escape

    return escape(str(v))


def money(v: float | None) -> str:
    """The one money format (the console's `usd` is the same): cents from $1 up, four
    decimals below, so a sub-cent turn still shows what it cost."""
    if v is None:
        return "-"
    if v == 0:
        return "$0.00"
    return f"${v:,.4f}" if abs(v) < 1 else f"${v:,.2f}"


def num(v: int | float | None) -> str:
    if v is None:
        return "-"
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if abs(v) >= size:
            return f"{v / size:.1f}{unit}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def seconds(v: float | None) -> str:
    if v is None:
        return "-"
    if v < 10:
        return f"{v:.1f}s"
    if v < 60:
        return f"{v:.0f}s"
    if v < 3600:
        return f"{v // 60:.0f}m{v % 60:02.0f}s"
    return f"{v // 3600:.0f}h{(v % 3600) // 60:02.0f}m"


def when(iso: str | None) -> str:
    """ISO time as `YYYY-MM-DD HH:MM` (UTC) for tables."""
    return "-" if not iso else iso[:16].replace("T", " ")
