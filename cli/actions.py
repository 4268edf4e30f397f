"""`octel actions list`: what `octel watch`'s rules did to live sessions, newest first."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.app import app, console
from cli.output import Output, emit, output_options
from cli.tables import dash, read_store, window
from telemetry.queries.actions import ActionPage, list_actions

__all__ = ["actions_app"]

actions_app = typer.Typer(
    rich_markup_mode=None, help="What octel watch's rules did to live sessions.", no_args_is_help=True
)
app.add_typer(actions_app, name="actions")

_COLOUR = {
    "done": "green",
    "skipped": "yellow",
    "gone": "dim",
    "failed": "red",
    "notified": "cyan",
    "sending": "magenta",
    "unknown": "red",
}


@actions_app.command("list")
@output_options
def actions_list(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    session: Annotated[str | None, typer.Option(help="Only this session (or the tree it roots).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Rows at most.")] = 100,
    output: Output = Output.table,
) -> None:
    """Actions of octel watch's rules (rejected asks, aborts, notices) and asks answered by a
    person (rule person), done or skipped, newest first, with the evidence, what the server
    answered and who acted (the watcher, or who answered)."""
    t0, _ = window(since, None)
    with read_store(ctx) as db:
        page = list_actions(db, since=t0, session_id=session, limit=limit)
    emit(output, page, page.items, lambda: _table(page))


def _table(page: ActionPage) -> None:
    from rich.table import Table  # only a table needs rich

    table = Table(title=f"actions ({len(page.items)})", title_justify="left")
    width = max((len(a.session_id) for a in page.items), default=7)
    table.add_column("at")
    table.add_column("session", min_width=width, no_wrap=True)
    for h in ("rule", "action", "outcome", "what happened", "answer", "by"):
        table.add_column(h)
    for a in page.items:
        colour = _COLOUR.get(a.outcome, "white")
        answer = f"{a.answer_status} {a.answer or ''}".strip() if a.answer_status is not None else None
        table.add_row(
            a.at.isoformat()[:19].replace("T", " "),
            dash(a.session_id),
            a.rule,
            a.action,
            f"[{colour}]{a.outcome}[/]",
            dash(a.detail),
            dash(answer),
            dash(a.watcher),
        )
    console.print(table)
