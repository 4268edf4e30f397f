"""`octel import …`: bring existing data into the store.

`import_app` is the one `import` command group; other command modules attach their own
subcommands to it (`octel import archives` lives with the archiver's commands). Whichever
module is imported first creates and registers the group, the other finds it on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.app import (
    command_group,
    console,
    err_console,
    fail,
    open_redactor,
    open_store,
    print_json,
    settings_of,
)
from cli.tables import dash
from telemetry.services.ingest.dispatch_import import (
    DispatchImportError,
    DispatchReport,
    count_rows,
    import_dispatch_db,
)
from telemetry.timeutil import utcnow

__all__ = ["import_app"]


import_app = command_group("import", "Bring existing data into the store.")


@import_app.command("dispatch-db")
def import_dispatch(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="SQLite file of an older dispatcher.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Import cycles from an older dispatcher's SQLite file (review, implementer, conflict tables).

    Safe to run again: stored cycles are left alone, cycles that ended since are finished.
    """
    try:
        totals = count_rows(path)
    except DispatchImportError as e:
        fail(str(e), 2)
    redactor = open_redactor(settings_of(ctx))
    with open_store(settings_of(ctx)) as engine:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        # The bar goes to stderr so `--json` output stays clean on stdout.
        with Progress(*columns, console=err_console, transient=as_json) as bar:
            tasks = {t: bar.add_task(t, total=n) for t, n in totals.items()}
            report = import_dispatch_db(
                engine, path, utcnow(), redactor, lambda table, n: bar.advance(tasks[table], n)
            )
    if as_json:
        print_json(report)
    else:
        _print_dispatch_report(path, report)
    if report["totals"]["rejected"]:  # reported and skipped, but not imported: a failure
        raise typer.Exit(1)


def _print_dispatch_report(path: Path, report: DispatchReport) -> None:
    table = Table(title=f"imported from {path}", title_justify="left")
    for h in ("table", "driver", "rows", "new", "finished now", "unchanged", "rejected"):
        table.add_column(h, justify="left" if h in ("table", "driver") else "right")
    for t in report["tables"]:
        table.add_row(
            t["table"],
            t["driver"],
            *(str(t[k]) for k in ("rows", "imported", "finished", "unchanged", "rejected")),
        )
    console.print(table)
    for r in report["rejects"][:10]:
        console.print(
            f"[yellow]rejected[/] {r['table']} row {dash(r['row'])}: {dash(r['reason'])}", highlight=False
        )
