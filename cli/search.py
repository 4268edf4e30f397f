"""`octel search "…"`: every archived part's text; `octel db reindex`: build that index for
sessions archived before it existed, and for those still queued (`search_catchup`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from cli.app import app, console, err_console, fail, open_redactor, open_store, print_json, settings_of
from cli.options import CursorOpt, SinceOpt
from cli.output import Output, emit, output_options
from cli.serve import db_app
from cli.tables import print_page, window
from telemetry.queries.content_search import SearchError, SearchRequest, search
from telemetry.queries.search_models import SearchHit, SearchPage

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from telemetry.services.index.search_catchup import CatchupReport
    from telemetry.settings import Settings

__all__ = ["db_reindex", "search_cmd"]


def _snippet(hit: SearchHit) -> Text:
    """The snippet with its matches in bold: a `Text`, never markup, so the text is shown as is."""
    out = Text(hit.snippet)
    for span in hit.highlights:
        out.stylize("bold reverse", span.start, span.end)
    return out


def _table(page: SearchPage) -> None:
    if page.jump is not None:
        console.print(f"{page.jump.matched}: octel sessions show {page.jump.session_id}", highlight=False)
    table = Table(title=f"search: {page.q}", title_justify="left")
    table.add_column("session", no_wrap=True)
    table.add_column("turn", justify="right")
    table.add_column("what")
    table.add_column("when", no_wrap=True)
    table.add_column("text", ratio=1)
    for h in page.hits:
        what = f"{h.kind}:{h.tool}" if h.tool else h.kind
        at = h.at.strftime("%Y-%m-%d %H:%M") if h.at else "-"
        table.add_row(Text(h.session_id), str(h.turn), Text(what), at, _snippet(h))
    print_page(table, page.next_cursor)


@app.command("search")
@output_options
def search_cmd(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help='Words, "a phrase", foo*, tool:bash, agent:, model:, …')],
    since: SinceOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Hits per page.")] = 50,
    cursor: CursorOpt = None,
    output: Output = Output.table,
) -> None:
    """Find any text any agent said or ran: prompts, answers, reasoning, tool calls, errors."""
    from telemetry.store.db import session_scope

    t0, _ = window(since, None)
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        _catch_up(settings, engine, None)  # no server may be running to have done it
        with session_scope(engine, write=False) as db:
            try:
                page = search(db, SearchRequest(q=query, since=t0, limit=limit, cursor=cursor))
            except SearchError as e:
                fail(f"{'--cursor' if e.field == 'cursor' else 'query'}: {e}", 2)
    emit(output, page, page.hits, lambda: _table(page))


def _catch_up(settings: Settings, engine: Engine, total: int | None) -> CatchupReport:
    """Index what is queued, with a progress bar on stderr (none when nothing is queued)."""
    from telemetry.archive_store import archive_store
    from telemetry.services.index.search_catchup import CatchupReport, catch_up, pending_count

    total = pending_count(engine) if total is None else total
    if total == 0:
        return CatchupReport()
    redactor = open_redactor(settings)
    columns = (TextColumn("indexing sessions"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("sessions", total=total)
        return catch_up(
            engine, archive_store(settings, engine), redactor, progress=lambda n: bar.advance(task, n)
        )


@db_app.command("reindex")
def db_reindex(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Build the search index for sessions archived before it existed and for those still
    queued (resumable: what was indexed stays indexed)."""
    from telemetry.services.index.search_catchup import enqueue_unindexed, pending_count

    settings = settings_of(ctx)
    with open_store(settings) as engine:
        enqueue_unindexed(engine)
        report = _catch_up(settings, engine, pending_count(engine))
    for line in report.errors:
        err_console.print(Text(f"skipped {line}"))
    if as_json:
        print_json({"sessions": report.sessions, "parts": report.parts, "errors": report.errors})
    else:
        console.print(f"indexed {report.parts} parts of {report.sessions} sessions", highlight=False)
