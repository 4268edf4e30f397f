"""`octel export otel`: archived session trees as OpenTelemetry traces, sent over OTLP/HTTP."""

from __future__ import annotations

from typing import Annotated, TypedDict

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlmodel import Session

from cli.app import command_group, console, err_console, fail, open_store, print_json, settings_of
from cli.tables import window
from telemetry.otel_export.export import TreeExport, TreeExportDoc, TreeExporter
from telemetry.otel_export.otlp_http import endpoint
from telemetry.otel_export.sources import select_roots

__all__ = ["export_app"]

export_app = command_group("export", "Send archived data to other tools.")


@export_app.command("otel")
def export_otel(
    ctx: typer.Context,
    session_ids: Annotated[
        list[str] | None, typer.Argument(help="Sessions to export (a subagent stands for its whole tree).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Trees archived since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    label: Annotated[str | None, typer.Option(help="Trees archived with this label.")] = None,
    content: Annotated[
        bool | None,
        typer.Option(
            "--content/--no-content", help="Add prompts, outputs and tool I/O (OCTEL_OTEL_CONTENT)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary instead of a table.")] = False,
) -> None:
    """Send session trees to the OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, …_HEADERS) as traces.

    Exporting a tree again sends the same trace and span ids, so the backend keeps one trace.
    """
    ids = list(session_ids or [])
    if not ids and since is None and label is None:
        fail("name the trees to export: SESSION_ID …, --since or --label", 2)
    t0 = window(since, None)[0]
    settings = settings_of(ctx)
    if content is not None:
        settings = settings.model_copy(update={"otel_content": content})
    with open_store(settings) as engine:
        with Session(engine) as db:
            roots, unknown = select_roots(db, ids, since=t0, label=label)
        if unknown:
            fail(f"no archived session {', '.join(map(repr, unknown))}", 2)
        trees = TreeExporter(settings, engine, attempts=3)  # pauses of 1 s and 2 s between tries
        results: list[TreeExport] = []  # filled even when a later tree fails to load
        try:
            with Progress(
                TextColumn("exporting"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("trees"),
                TimeElapsedColumn(),
                console=err_console,
                disable=as_json or not err_console.is_terminal,
            ) as bar:
                task = bar.add_task("export", total=len(roots))
                results = trees.export_roots(roots, progress=lambda: bar.advance(task))
        finally:
            trees.shutdown()
    summary = _summary(results, settings.otel_service_name)
    if as_json:
        print_json(summary)
    else:
        _render(summary)
    if summary["dropped"] or any(r.error for r in results):
        raise typer.Exit(1)


class _Summary(TypedDict):
    """What `octel export` prints with --json."""

    endpoint: str
    service_name: str
    trees: int
    spans: int
    exported: int
    dropped: int
    results: list[TreeExportDoc]


def _summary(results: list[TreeExport], service: str) -> _Summary:
    return {
        "endpoint": endpoint(),
        "service_name": service,
        "trees": len(results),
        "spans": sum(r.spans for r in results),
        "exported": sum(r.exported for r in results),
        "dropped": sum(r.dropped for r in results),
        "results": [r.to_dict() for r in results],
    }


def _render(s: _Summary) -> None:
    console.print(
        f"{s['trees']} trees, {s['spans']} spans to {s['endpoint']} ({s['service_name']}): "
        f"{s['exported']} exported, {s['dropped']} dropped",
        highlight=False,
    )
    for r in s["results"]:
        mark = "[red]failed[/]" if r["error"] else "[green]ok[/]"
        console.print(
            f"  {r['root_session_id']}  trace {r['trace_id']}  {r['spans']} spans  {mark}", highlight=False
        )
        for p in [*r["problems"], *([r["error"]] if r["error"] else [])]:
            err_console.print(f"  [yellow]{r['root_session_id']}:[/] {p}", highlight=False)
