"""`octel janitor`: delete from an OpenCode server the root trees octel holds archived,
verified and old (`telemetry.tower.janitor`), audited, with a report of what was freed."""

from __future__ import annotations

import asyncio
from typing import Annotated

import httpx
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from archiver.errors import FetchError
from cli.app import app, console, err_console, fail, open_redactor, open_store, print_json, settings_of
from cli.output import JsonOpt
from telemetry.archive_store import archive_store
from telemetry.timeutil import parse_duration
from telemetry.tower.janitor import sweep
from telemetry.tower.janitor_report import JanitorReport
from telemetry.tree_archiving import opencode_client

__all__ = ["janitor_cmd"]

_COLOUR = {"deleted": "green", "would_delete": "cyan", "kept": "yellow", "gone": "dim", "failed": "red"}


def older_than_seconds(text: str, option: str = "--older-than") -> float:
    """A duration option in seconds; exits 2 naming the option when it is not one."""
    try:
        return parse_duration(text.strip()).total_seconds()
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


@app.command("janitor")
def janitor_cmd(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", help="OpenCode URL (OCTEL_OPENCODE_URL).")] = None,
    older_than: Annotated[
        str, typer.Option("--older-than", metavar="DURATION", help="Only trees idle this long (7d, 36h).")
    ] = "7d",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing, audit nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete from an OpenCode server the root trees that are idle, archived complete in the
    store, read back valid and unchanged since, and idle longer than --older-than; keep every
    other tree and say why. Every deletion and every tree kept is audited (`octel actions
    list`)."""
    from cli.archive import _check_redaction, _check_server  # not at import: archive loads more

    settings = settings_of(ctx)
    _check_redaction(settings)
    limit = older_than_seconds(older_than)
    url = _check_server(server or settings.opencode_url)
    redactor = open_redactor(settings)

    async def run(bar: Progress) -> JanitorReport:
        task = bar.add_task("checking", total=None)
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0)) as http:
            client = opencode_client(http, url, settings)
            return await sweep(
                client,
                engine,
                archive_store(settings, engine),
                older_than_s=limit,
                redactor=redactor,
                dry_run=dry_run,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )

    columns = (TextColumn("janitor"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with open_store(settings) as engine, Progress(*columns, console=err_console, disable=as_json) as bar:
        try:
            report = asyncio.run(run(bar))
        except FetchError as exc:
            where = f" ({exc.path})" if exc.path else ""
            fail(f"cannot read the sessions of {url}{where}: {exc.message}")
        except httpx.HTTPError as exc:
            fail(f"cannot reach {url}: {type(exc).__name__}: {exc}")
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _render(report)
    if any(t.fate == "failed" for t in report.trees):
        raise typer.Exit(1)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _render(r: JanitorReport) -> None:
    table = Table(title=f"janitor of {r.server}{' (dry run)' if r.dry_run else ''}", title_justify="left")
    for h in ("tree", "fate", "reason", "sessions", "messages", "what"):
        table.add_column(h)
    for t in r.trees:
        colour = _COLOUR.get(t.fate, "white")
        table.add_row(
            t.root_session_id,
            f"[{colour}]{t.fate}[/]",
            t.reason or "-",
            str(t.sessions),
            str(t.messages),
            t.detail,
        )
    console.print(table)
    verb = "would free" if r.dry_run else "freed"
    kept = ", ".join(f"{k} {v}" for k, v in sorted(r.kept.items())) or "none"
    console.print(
        f"{verb}: {r.trees_deleted} trees, {r.sessions_deleted} sessions, {r.messages_deleted} messages, "
        f"{r.parts_deleted} parts (held by {_size(r.archive_bytes)} of archive); kept: {kept}",
        highlight=False,
    )
