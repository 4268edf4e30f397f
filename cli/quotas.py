"""`octel quotas`: each quota window of `OCTEL_BUDGETS_FILE`, what it used, its limit, and when it
runs out at the last 24 hours' rate."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from cli.app import app, console, fail, settings_of
from cli.output import Output, emit, output_options
from cli.tables import read_store
from telemetry.budget_rules import quotas_of
from telemetry.queries.quotas import QuotaOut, QuotasOut, quota_windows
from telemetry.timeutil import utcnow

__all__ = ["quotas_cmd"]


@app.command("quotas")
@output_options
def quotas_cmd(ctx: typer.Context, output: Output = Output.table) -> None:
    """Quota windows per provider or key (monthly with a reset day, or rolling N hours): used,
    limit, share, and the burn-rate forecast, e.g. "at the last 24 h's rate key team-a runs out on
    Dec 19 04:00 UTC, 12 days before its reset"."""
    try:
        declared = quotas_of(settings_of(ctx))
    except ValueError as exc:
        fail(str(exc), 2)
    with read_store(ctx) as db:
        got = quota_windows(db, declared, utcnow())
    emit(output, got, got.quotas, lambda: _print(got))


def _amount(q: QuotaOut, v: float) -> str:
    return f"${v:,.2f}" if q.unit == "usd" else f"{v:,.0f}"


def _print(got: QuotasOut) -> None:
    if not got.quotas:
        said = "No quota windows: declare them under [[quotas]] in OCTEL_BUDGETS_FILE (docs/budgets.md)."
        console.print(said, markup=False)
        return
    t = Table(box=None, header_style="bold")
    for col in ("provider", "window", "used", "limit", "share", "renews", "forecast"):
        t.add_column(col, justify="right" if col in ("used", "limit", "share") else "left")
    for q in got.quotas:
        colour = "red" if q.used_ratio >= 1 or q.runs_out_before_reset else "default"
        t.add_row(
            q.provider,
            q.window,
            _amount(q, q.used),
            _amount(q, q.limit),
            f"[{colour}]{q.used_ratio:.0%}[/]",
            f"{q.reset_at:%b %d}" if q.reset_at else "rolling",
            escape(q.forecast),
        )
    console.print(t)
