"""`octel cycles list|summary` and `octel costs`: what the fleet did and what it cost."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated

import typer

from cli.app import app, console, fail, settings_of
from cli.fit import Col, fitted_table
from cli.options import CursorOpt, LimitOpt, SinceOpt, UntilOpt
from cli.output import Output, emit, output_options
from cli.tables import dash, money, num, print_page, ratio, read_store, seconds, when, window
from telemetry.queries.costs import COST_WINDOW, GROUP_KEYS
from telemetry.queries.costs_answer import costs_answer, groupings
from telemetry.queries.cycle_fleet import cycles_page, summary_answer
from telemetry.queries.cycles import CycleFilter
from telemetry.queries.fleet_models import (
    CostRow,
    CostsAnswer,
    CyclePage,
    CycleRecord,
    CyclesSummary,
    TopSpend,
)
from telemetry.queries.paging import CursorError
from telemetry.timeutil import utcnow

__all__ = ["cycles_app"]

cycles_app = typer.Typer(
    rich_markup_mode=None, help="Dispatcher cycles: list and per-driver summary.", no_args_is_help=True
)
app.add_typer(cycles_app, name="cycles")


@cycles_app.command("list")
@output_options
def cycles_list(
    ctx: typer.Context,
    driver: Annotated[str | None, typer.Option(help="Only this driver.")] = None,
    state: Annotated[str | None, typer.Option(help="Only this terminal state.")] = None,
    in_flight: Annotated[
        bool | None,
        typer.Option("--in-flight/--finished", help="Only cycles still running, or only ended ones."),
    ] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: LimitOpt = 50,
    cursor: CursorOpt = None,
    cycle: Annotated[str | None, typer.Option(help="Only the cycle of this exact id.")] = None,
    output: Output = Output.table,
) -> None:
    """Dispatcher cycles, newest first; --cycle ID finds one cycle (with --json, all its fields)."""
    now = utcnow()
    t0, t1 = window(since, until, now)
    f = CycleFilter(driver, state, t0, t1, in_flight, limit, cursor, cycle)
    with read_store(ctx) as db:
        try:
            page = cycles_page(db, f, now, settings_of(ctx).long_worker_seconds)
        except CursorError as e:
            fail(str(e), 2)
    emit(output, page, page.items, lambda: _cycles_table(page))


def _open_state(c: CycleRecord) -> str:
    """An open cycle as the console tags it: orphaned, long-running worker, or in flight."""
    if c.orphaned:
        return "[red]orphaned[/] (daemon down)"
    if c.long_running:
        return "[yellow]in flight[/] (long-running worker)"
    return "[cyan]in flight[/]"


# Decisive columns first; the rest go when the terminal is narrow, the highest rank first.
_CYCLE_COLS = (
    Col("cycle"),
    Col("driver", rank=3),
    Col("started", rank=4),
    Col("duration", right=True),
    Col("state", flex=True),
    Col("outcome", rank=2),
    Col("error", rank=5),
    Col("claims", right=True, rank=7),
    Col("session", rank=6, flex=True),
)


def _session(c: CycleRecord) -> str:
    """The session's id, then its title (cut first when the terminal is narrow; piped, whole)."""
    if not c.session_id or not c.session_title:
        return dash(c.session_id)
    return f"{dash(c.session_id)} {dash(c.session_title)}"


def _cycles_table(page: CyclePage) -> None:
    rows = [
        (
            dash(c.cycle_id),
            dash(c.driver),
            when(c.started_at),
            seconds(c.duration_s) if not c.in_flight else f"{seconds(c.elapsed_s)}…",
            _open_state(c) if c.in_flight else dash(c.terminal_state),
            dash(c.worker_outcome),
            dash(c.error_kind),
            dash(c.claims_count),
            _session(c),
        )
        for c in page.items
    ]
    print_page(fitted_table(console, "cycles", _CYCLE_COLS, rows), page.next_cursor)


@cycles_app.command("summary")
@output_options
def cycles_summary_cmd(
    ctx: typer.Context,
    since: Annotated[
        str, typer.Option(help="Cycles begun since this long ago (24h, 7d) or an ISO time.")
    ] = "24h",
    output: Output = Output.table,
) -> None:
    """Per driver: cycles by terminal state and worker outcome (rows: driver, state, outcome)."""
    now = utcnow()
    t0, _ = window(since, None, now)
    assert t0 is not None  # a default is given
    # asked as a duration (24h, 7d), the window is said in hours, as /api/cycles/summary?hours= says it
    hours = None if _is_iso(since) else (now - t0).total_seconds() / 3600
    with read_store(ctx) as db:
        answer = summary_answer(db, t0, now, settings_of(ctx).long_worker_seconds, hours)
    flat = [
        {"driver": d.driver, "terminal_state": st, "worker_outcome": outcome, "cycles": n}
        for d in answer.drivers
        for st, outcomes in sorted(d.by_state.items())
        for outcome, n in sorted(outcomes.items())
    ]
    emit(output, answer, flat, lambda: _summary_table(answer))


def _is_iso(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


_SUMMARY_COLS = (
    Col("driver", flex=True),
    Col("terminal state"),
    Col("worker outcome", flex=True),
    Col("cycles", right=True),
)


def _summary_table(answer: CyclesSummary) -> None:
    rows: list[tuple[str, str, str, str]] = []
    for d in answer.drivers:
        rows.append((f"[bold]{dash(d.driver)}[/]", "[dim]all[/]", "", str(d.total)))
        if d.in_flight:
            long = f" ({d.long_running} long-running)" if d.long_running else ""
            rows.append(("", "[cyan]in flight[/]", long, str(d.in_flight)))
        if d.orphaned:
            rows.append(("", "[red]orphaned[/]", "daemon down", str(d.orphaned)))
        for st in sorted(d.by_state):
            for outcome, n in sorted(d.by_state[st].items()):
                rows.append(("", dash(st), dash(outcome), str(n)))
    console.print(fitted_table(console, f"cycles since {when(answer.since)}", _SUMMARY_COLS, rows))


class StackBy(enum.Enum):
    agent = "agent"
    model = "model"


@app.command("costs")
@output_options
def costs(
    ctx: typer.Context,
    by: Annotated[
        str, typer.Option(help=f"Group by each of {','.join(GROUP_KEYS)} asked (comma-separated).")
    ] = "agent",
    since: Annotated[
        str, typer.Option(help="Since this long ago (24h, 7d, all for everything) or an ISO time.")
    ] = COST_WINDOW,
    until: UntilOpt = None,
    top: Annotated[
        int, typer.Option(min=0, max=100, help="Also list the N most expensive sessions and trees.")
    ] = 0,
    stack: Annotated[
        StackBy, typer.Option(help="The daily series (--json) stacked by agent or model.")
    ] = StackBy.agent,
    reprice: Annotated[
        bool,
        typer.Option(
            "--reprice",
            help="First price the stored OpenCode archives again at the prices in use now "
            "(the turns octel priced; a cost the server recorded stays).",
        ),
    ] = False,
    output: Output = Output.table,
) -> None:
    """Tokens by kind, cost and cache-hit ratio over OpenCode sessions and Claude CLI runs,
    grouped each way asked: the answer of `GET /api/costs`."""
    try:
        keys = groupings([by])
    except ValueError as e:
        fail(f"--by: {e}", 2)
    repriced = True
    if reprice:
        from cli.reprice import reprice_stored

        repriced = reprice_stored(ctx)
    now = utcnow()
    t0, t1 = window(None if since == "all" else since, until, now)
    if t0 is not None and t0 >= (t1 or now):
        fail("--since must be earlier than now", 2)
    with read_store(ctx) as db:
        answer = costs_answer(db, keys, t0, t1, top=top, stack=stack.value, now=now)
    emit(output, answer, _cost_rows(answer), lambda: _costs_tables(answer, top))
    if not repriced:
        raise typer.Exit(1)


def _cost_rows(answer: CostsAnswer) -> list[CostRow]:
    """`--jsonl` and `--csv`: per grouping, per key, its rows by source (the key named as the
    grouping, as `source`, `agent`, … and the figures). A source row holds no group key, so
    setting the grouping's field puts it second, after `source`, as the JSON it dumps to."""
    return [
        s.model_copy(update={key: row.key})
        for key, rows in answer.breakdowns.items()
        for row in rows
        for s in row.sources or []
    ]


# the token kinds least read go first on a narrow terminal; the group, the count and the cost stay
_COST_RANKS = {
    "count": 2,
    "input": 4,
    "output": 5,
    "reasoning": 8,
    "cache read": 6,
    "cache write": 7,
    "hit": 3,
}
_TOP_SESSION_COLS = (
    Col("session or run"),
    Col("agent", rank=2),
    Col("model", rank=3),
    Col("title", flex=True),
    Col("cost", right=True),
)
_TOP_TREE_COLS = (
    Col("root or run"),
    Col("agent", rank=2),
    Col("title", flex=True),
    Col("sessions in tree", right=True, rank=3),
    Col("own", right=True, rank=1),
    Col("tree", right=True),
)


def _costs_tables(out: CostsAnswer, top: int) -> None:
    tot = out.totals
    feet = {
        "source": "total",
        "count": str(tot.count),
        "input": num(tot.tokens.input),
        "output": num(tot.tokens.output),
        "reasoning": num(tot.tokens.reasoning),
        "cache read": num(tot.tokens.cache_read),
        "cache write": num(tot.tokens.cache_write),
        "hit": ratio(tot.cache_hit_ratio),
        "cost": money(tot.cost_usd),
    }
    for key, merged in out.breakdowns.items():
        cols = [
            Col("source"),
            Col(key, flex=True),
            *(Col(h, right=True, rank=_COST_RANKS[h]) for h in _COST_RANKS),
            Col("cost", right=True),
        ]
        rows = []
        for m in merged:
            for r in m.sources or []:
                tk = r.tokens
                rows.append(
                    (
                        dash(r.source),
                        dash(m.key),
                        str(r.count),
                        num(tk.input),
                        num(tk.output),
                        num(tk.reasoning),
                        num(tk.cache_read),
                        num(tk.cache_write),
                        ratio(r.cache_hit_ratio),
                        money(r.cost_usd),
                    )
                )
        title = f"costs by {key}"
        console.print(fitted_table(console, title, cols, rows, [feet.get(c.header, "") for c in cols]))
    if not out.breakdowns:
        console.print(f"total {money(tot.cost_usd)} over {tot.count}")
    live = out.live
    if live and live.count:
        console.print(f"live now, not archived yet: {money(live.cost_usd)} over {live.count} sessions")
    if top:
        srows = [
            (_spender(s), dash(s.agent), dash(s.model), dash(s.title), money(s.cost_usd))
            for s in out.top_sessions
        ]
        console.print(
            fitted_table(console, "most expensive sessions and Claude runs", _TOP_SESSION_COLS, srows)
        )
        trows = [
            (
                _spender(t),
                dash(t.agent),
                dash(t.title),
                str(t.subtree_session_count),
                money(t.cost_usd),
                money(t.subtree_cost_usd),
            )
            for t in out.top_trees
        ]
        console.print(fitted_table(console, "most expensive trees", _TOP_TREE_COLS, trows))


def _spender(item: TopSpend) -> str:
    """A most-expensive row's name: the session id, or `claude run KEY` for a Claude CLI run."""
    if item.source == "claude":
        return f"claude run {dash(item.run_key)}"
    return dash(item.session_id)
