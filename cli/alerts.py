"""`octel alerts list`: what alert delivery sent to Alertmanager and webhooks, newest first."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cli.app import app, console
from cli.output import Output, emit, output_options
from cli.tables import dash, read_store, window
from telemetry.queries.alerts import AlertDeliveryPage, list_alert_deliveries

__all__ = ["alerts_app"]

alerts_app = typer.Typer(
    rich_markup_mode=None, help="What alert delivery sent to Alertmanager and webhooks.", no_args_is_help=True
)
app.add_typer(alerts_app, name="alerts")

_COLOUR = {"sent": "green", "failed": "red"}


@alerts_app.command("list")
@output_options
def alerts_list(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    key: Annotated[str | None, typer.Option(help="Only this alert key (stuck:SESSION:DETECTOR).")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session (or the tree it roots).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Rows at most.")] = 100,
    output: Output = Output.table,
) -> None:
    """Alert deliveries, newest first: the alert (firing or resolved), the channel, when, how
    many tries it took and what the channel answered."""
    t0, _ = window(since, None)
    with read_store(ctx) as db:
        page = list_alert_deliveries(db, since=t0, key=key, session_id=session, limit=limit)
    emit(output, page, page.items, lambda: _table(page))


def _table(page: AlertDeliveryPage) -> None:
    table = Table(title=f"alert deliveries ({len(page.items)})", title_justify="left")
    for h in ("sent at", "alert", "state", "channel", "outcome", "tries", "answer", "summary"):
        table.add_column(h)
    for a in page.items:
        colour = _COLOUR.get(a.outcome, "white")
        answer = f"{a.status_code} {a.answer or ''}".strip() if a.status_code is not None else a.answer
        table.add_row(
            a.sent_at.isoformat()[:19].replace("T", " "),
            a.alert_key,
            a.state,
            a.channel,
            f"[{colour}]{a.outcome}[/]",
            str(a.attempts),
            dash(answer),
            a.summary,
        )
    console.print(table)
