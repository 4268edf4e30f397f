"""`octel lost`: the session trees octel could not archive in full, what was lost and why."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.app import app, console
from cli.output import Output, emit, output_options
from cli.tables import read_store, when, window
from telemetry.queries.lost import LostTrees, list_lost

__all__ = ["lost_cmd"]


@app.command("lost")
@output_options
def lost_cmd(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="Rows at most.")] = 50,
    output: Output = Output.table,
) -> None:
    """Session trees octel could not archive in full, newest first: what was lost and why."""
    t0, _ = window(since, None)
    with read_store(ctx) as db:
        page = list_lost(db, t0, limit)
    emit(output, page, page.items, lambda: _table(page))


def _table(page: LostTrees) -> None:
    if not page.items:
        console.print("no tree lost: every tree seen was archived in full")
        return
    from rich.table import Table  # only a table needs rich

    table = Table(title="lost trees", title_justify="left")
    for h in ("detected", "tree", "deleted session", "reason", "archived", "messages", "what was lost"):
        table.add_column(h, justify="right" if h == "messages" else "left")
    for r in page.items:
        what = "; ".join(str(m.get("message")) for m in r.missing[:2])
        more = f" (+{len(r.missing) - 2} more)" if len(r.missing) > 2 else ""
        table.add_row(
            when(r.detected_at.isoformat()),
            r.root_session_id,
            r.top_session_id,
            r.reason,
            "partly" if r.archived else "no",
            str(r.messages),
            what + more,
        )
    console.print(table)
