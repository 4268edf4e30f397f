"""`octel prune --older-than 30d [--dry-run] [--keep-failures/--no-keep-failures]`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from cli.app import app, console, err_console, fail, open_store, print_json, settings_of
from telemetry.archive_store import archive_store
from telemetry.services.index.prune import plan_prune, prune
from telemetry.store.db import session_scope
from telemetry.timeutil import parse_duration, utcnow

__all__ = ["prune_cmd"]


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


@app.command("prune")
def prune_cmd(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option(help="Remove what is older than this (30d, 12w, 720h).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would go.")] = False,
    keep_failures: Annotated[
        bool,
        typer.Option(
            "--keep-failures/--no-keep-failures",
            help="Keep stuck or failed session trees, failed cycles and failed Claude runs.",
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Remove old archive files, index rows, cycles and Claude runs. Counters never go down."""
    try:
        age = parse_duration(older_than)
    except ValueError as e:
        fail(f"--older-than: {e}", 2)
    if age.total_seconds() <= 0:
        fail("--older-than must be longer than zero", 2)
    cutoff = utcnow() - age
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        if dry_run:
            report = prune(
                engine, archive_store(settings, engine), cutoff, keep_failures=keep_failures, dry_run=True
            )
        else:
            with session_scope(engine, write=False) as db:
                plan = plan_prune(db, cutoff, keep_failures)
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
            with Progress(*columns, console=err_console, transient=True) as bar:
                tasks = {
                    "sessions": bar.add_task("sessions", total=len(plan.sessions)),
                    "cycles": bar.add_task("cycles", total=len(plan.cycles)),
                    "agent_runs": bar.add_task("claude runs", total=len(plan.runs)),
                }
                report = prune(
                    engine,
                    archive_store(settings, engine),
                    cutoff,
                    keep_failures=keep_failures,
                    progress=lambda what, n: bar.advance(tasks[what], n),
                )
    if as_json:
        print_json(report)
    else:
        verb = "would remove" if dry_run else "removed"
        table = Table(
            title=f"{verb} (older than {older_than}, before {cutoff:%Y-%m-%d %H:%M} UTC)",
            title_justify="left",
        )
        table.add_column("what")
        table.add_column(verb, justify="right")
        table.add_column("kept", justify="right")
        kept = report["kept"]
        table.add_row("session trees", str(report["trees"]), "")
        table.add_row("sessions", str(report["sessions"]), str(kept.get("sessions", 0)))
        table.add_row("findings", str(report["findings"]), "")
        table.add_row("archive files", f"{report['archive_files']} ({_size(report['archive_bytes'])})", "")
        table.add_row("cycles", str(report["cycles"]), str(kept.get("cycles", 0)))
        table.add_row("claude runs", str(report["agent_runs"]), str(kept.get("agent_runs", 0)))
        console.print(table)
        if report["archive_files_outside"]:
            console.print(
                f"left {report['archive_files_outside']} archive files outside {settings.archives} alone",
                highlight=False,
            )
        for err in report["errors"][:10]:
            err_console.print(f"[yellow]could not delete[/] {escape(err)}", highlight=False)
    if report["errors"]:
        raise typer.Exit(1)
