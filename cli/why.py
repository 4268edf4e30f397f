"""`octel why ID`: why a session or cycle stopped, in one verdict with its evidence."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from cli.app import app, console, fail, settings_of
from cli.output import Output, emit, output_options
from cli.tables import archives_of, read_store
from telemetry.queries.why import why
from telemetry.queries.why_live import why_live
from telemetry.queries.why_models import WhyAnswer
from telemetry.timeutil import utcnow

__all__ = ["why_cmd"]

_COLOUR = {
    "completed": "green",
    "running": "cyan",
    "orphaned": "red",
    "loop_detected": "red",
    "permission_wait": "red",
    "timed_out": "red",
    "retries": "yellow",
    "empty_completion": "yellow",
    "aborted": "yellow",
    "error": "red",
    "over_budget": "red",
}


@app.command("why")
@output_options
def why_cmd(
    ctx: typer.Context,
    ident: Annotated[str, typer.Argument(metavar="ID", help="A session id or a cycle id.")],
    output: Output = Output.table,
) -> None:
    """Why a session or cycle stopped: completed, timed out, loop detected, permission wait,
    retries, empty completion, aborted, error or over budget, with the evidence; for a session running now,
    what it is doing and for how long (from octel watch)."""
    with read_store(ctx) as db:
        live = why_live(db, ident, utcnow())
        # a session still running is explained by what it does now, not by an older archive
        running = live is not None and live.code == "running"
        long_s = settings_of(ctx).long_worker_seconds
        answer = live if running else why(db, ident, archives_of(ctx, db), long_s) or live
    if answer is None:
        fail(f"no session or cycle {ident!r}")
    emit(output, answer, answer.evidence, lambda: _print(ident, answer))


def _print(ident: str, got: WhyAnswer) -> None:
    colour = _COLOUR.get(got.code, "white")
    ids = {"session_id": got.session_id, "cycle_id": got.cycle_id}
    links = [f"{k} {v}" for k, v in ids.items() if v and v != ident]
    console.print(
        f"[bold]{escape(ident)}[/] ({got.kind}{', ' + ', '.join(links) if links else ''}): "
        f"[bold {colour}]{got.verdict}[/]",
        highlight=False,
    )
    for i, e in enumerate(got.evidence):
        mark = "because" if i == 0 else "   also"
        console.print(f"  {mark} [dim]{e.source:>7}[/]  {escape(e.detail)}", highlight=False)
