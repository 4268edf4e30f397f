"""`octel archives export DIR`: the archive documents of the store, as files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.app import command_group, console, err_console, fail, open_store, print_json, settings_of
from cli.output import JsonOpt
from cli.tables import window
from telemetry.archive_store import archive_store
from telemetry.services.index.archive_export import ExportReport, count_documents, export_archives, trees_of

__all__ = ["archives_app"]

archives_app = command_group("archives", "Archive documents of the store: write them out as files.")


@archives_app.command("export")
def export_cmd(
    ctx: typer.Context,
    folder: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="Folder to write the files into (made, mode 0700, if missing)."),
    ],
    session_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Only these sessions' trees (a subagent stands for its tree)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only documents archived since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a file that holds something else (else it is reported).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write the store's archive documents into a folder as archive files.

    Every document of the configured store (the folder or the database), named and written as
    the folder store writes its files, so `octel import archives DIR` loads them into another
    store. A file that already holds the document is left; one that holds something else is
    reported and kept unless --force; a document that cannot be read is reported and skipped
    (exit 1)."""
    if folder.exists() and not folder.is_dir():
        fail(f"{folder} is not a folder", 2)
    t0 = window(since, None)[0]
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        roots = None
        if session_ids:
            roots, unknown = trees_of(engine, session_ids)
            if unknown:
                fail(f"no archived session {', '.join(map(repr, unknown))}", 2)
        total = count_documents(engine, since=t0, roots=roots)
        with Progress(
            TextColumn("exporting"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            disable=as_json or not err_console.is_terminal,
        ) as bar:
            task = bar.add_task("export", total=total)
            try:
                report = export_archives(
                    engine,
                    archive_store(settings, engine),
                    folder,
                    since=t0,
                    roots=roots,
                    force=force,
                    progress=lambda: bar.advance(task),
                )
            except OSError as exc:
                fail(f"cannot write into {folder}: {exc.strerror or exc}")
    if as_json:
        print_json(report)
    else:
        _render(report)
    if report.failed or report.differing:
        raise typer.Exit(1)


def _render(r: ExportReport) -> None:
    console.print(
        f"{r.documents} documents into {r.folder}: {r.written} written, {r.unchanged} unchanged, "
        f"{r.replaced} replaced, {len(r.differing)} differing (kept), {len(r.failed)} failed",
        highlight=False,
    )
    for p in r.differing:
        said = f"[yellow]differs[/] {escape(p.file)} ({p.session_id}): {escape(p.error)}"
        err_console.print(said, highlight=False)
    for p in r.failed:
        said = f"[red]failed[/] {escape(p.file)} ({p.session_id or '-'}): {escape(p.error)}"
        err_console.print(said, highlight=False)
