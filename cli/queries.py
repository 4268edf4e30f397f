"""`octel sessions list|show|tree`, `octel cycles list|summary` and `octel costs`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cli.app import app, console, fail, print_json, settings_of
from cli.live import print_live_list, print_live_session, print_live_tree
from cli.session_view import load_turns, session_view, tree_view
from cli.tables import dash, money, num, print_page, ratio, read_store, seconds, when, window
from telemetry.queries.costs import GROUP_KEYS, cost_breakdown, most_expensive_sessions, most_expensive_trees
from telemetry.queries.cycles import CycleFilter, cycles_summary, list_cycles
from telemetry.queries.paging import CursorError
from telemetry.queries.sessions import MAX_LIMIT, SessionFilter, get_session, list_sessions, session_tree
from telemetry.timeutil import parse_since, utcnow

__all__ = ["cycles_app", "sessions_app"]

sessions_app = typer.Typer(
    help="Archived sessions: list, one session, its subagent tree.", no_args_is_help=True
)
cycles_app = typer.Typer(help="Dispatcher cycles: list and per-driver summary.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
app.add_typer(cycles_app, name="cycles")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SinceOpt = Annotated[str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")]
UntilOpt = Annotated[str | None, typer.Option(help="Only before this long ago or an ISO time.")]
LimitOpt = Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="Rows per page.")]
CursorOpt = Annotated[str | None, typer.Option(help="Continue after the page that printed this cursor.")]


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model (provider/model).")] = None,
    verdict: Annotated[str | None, typer.Option(help="Only this verdict: healthy, suspect, stuck.")] = None,
    label: Annotated[str | None, typer.Option(help="Only this label.")] = None,
    q: Annotated[str | None, typer.Option("--search", "-q", help="Text in the title or label.")] = None,
    root_only: Annotated[bool, typer.Option("--roots", help="Only root sessions.")] = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: LimitOpt = 50,
    cursor: CursorOpt = None,
    live: Annotated[bool, typer.Option("--live", help="Sessions running now, loudest first.")] = False,
    state: Annotated[str | None, typer.Option(help="With --live: only this state.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Archived sessions, newest first; with --live, the sessions running now."""
    if live or state is not None:
        with read_store(ctx) as db:
            print_live_list(db, state, as_json)
        return
    if verdict is not None and verdict not in ("healthy", "suspect", "stuck"):
        fail(f"--verdict must be healthy, suspect or stuck, not {verdict!r}", 2)
    t0, t1 = window(since, until)
    f = SessionFilter(agent, model, verdict, label, t0, t1, q, root_only, limit, cursor)
    with read_store(ctx) as db:
        try:
            page = list_sessions(db, f)
        except CursorError as e:
            fail(str(e), 2)
    if as_json:
        print_json(page)
        return
    table = Table(title="sessions", title_justify="left")
    # Ids are copied into the next command: never cut them, let the other columns give way.
    width = max((len(s["session_id"]) + 2 * min(s["depth"], 3) for s in page["items"]), default=7)
    table.add_column("session", min_width=width, no_wrap=True)
    for h in ("agent", "model", "verdict", "label", "turns", "tokens", "cost", "tree cost"):
        table.add_column(h, justify="right" if h in ("turns", "tokens", "cost", "tree cost") else "left")
    table.add_column("duration", justify="right")
    table.add_column("archived")
    for s in page["items"]:
        table.add_row(
            ("  " * min(s["depth"], 3)) + dash(s["session_id"]),
            dash(s["agent"]),
            dash(s["model"]),
            s["verdict"] + (" (in flight)" if s["in_flight"] else ""),
            dash(s["label"]),
            str(s["turn_count"]),
            num(s["tokens_total"]),
            money(s["cost_usd"]),
            money(s["subtree_cost_usd"]),
            seconds(s["duration_s"]),
            when(s["archived_at"]),
        )
    print_page(table, page)


@sessions_app.command("show")
def sessions_show(ctx: typer.Context, session_id: str, as_json: JsonOpt = False) -> None:
    """One session: its record, per-turn table (from the archive file), findings and tree."""
    with read_store(ctx) as db:
        got = get_session(db, session_id)
        if got is None and print_live_session(db, session_id, as_json):
            return
    if got is None:
        fail(f"no archived session {session_id!r} (nor a live one)")
    got["turns"], got["archive_problem"] = load_turns(
        settings_of(ctx).archives, got["session"]["archive_path"]
    )
    if as_json:
        print_json(got)
        return
    for part in session_view(got):
        console.print(part, highlight=False)


@sessions_app.command("tree")
def sessions_tree(ctx: typer.Context, session_id: str, as_json: JsonOpt = False) -> None:
    """The subagent tree under a session, with own and rolled-up cost."""
    with read_store(ctx) as db:
        tree = session_tree(db, session_id)
        if tree is None and print_live_tree(db, session_id, as_json):
            return
    if tree is None:
        fail(f"no archived session {session_id!r} (nor a live one)")
    if as_json:
        print_json(tree)
        return
    console.print(tree_view(tree))


@cycles_app.command("list")
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
    as_json: JsonOpt = False,
) -> None:
    """Dispatcher cycles, newest first."""
    now = utcnow()
    t0, t1 = window(since, until, now)
    f = CycleFilter(driver, state, t0, t1, in_flight, limit, cursor)
    with read_store(ctx) as db:
        try:
            page = list_cycles(db, f, now)
        except CursorError as e:
            fail(str(e), 2)
    if as_json:
        print_json(page)
        return
    table = Table(title="cycles", title_justify="left")
    width = max((len(c["cycle_id"]) for c in page["items"]), default=5)
    table.add_column("cycle", min_width=width, no_wrap=True)
    for h in ("driver", "started", "duration", "state", "outcome", "error", "claims", "session"):
        table.add_column(h, justify="right" if h in ("duration", "claims") else "left")
    for c in page["items"]:
        table.add_row(
            dash(c["cycle_id"]),
            dash(c["driver"]),
            when(c["started_at"]),
            seconds(c["duration_s"]) if not c["in_flight"] else f"{seconds(c['elapsed_s'])}…",
            "[cyan]in flight[/]" if c["in_flight"] else dash(c["terminal_state"]),
            dash(c["worker_outcome"]),
            dash(c["error_kind"]),
            dash(c["claims_count"]),
            dash(c["session_id"]),
        )
    print_page(table, page)


@cycles_app.command("summary")
def cycles_summary_cmd(
    ctx: typer.Context,
    since: Annotated[
        str, typer.Option(help="Cycles begun since this long ago (24h, 7d) or an ISO time.")
    ] = "24h",
    as_json: JsonOpt = False,
) -> None:
    """Per driver: cycles by terminal state and worker outcome."""
    try:
        t0 = parse_since(since, utcnow())
    except ValueError as e:
        fail(f"--since: {e}", 2)
    with read_store(ctx) as db:
        rows = cycles_summary(db, t0)
    if as_json:
        print_json({"since": t0.isoformat(), "drivers": rows})
        return
    table = Table(title=f"cycles since {when(t0.isoformat())}", title_justify="left")
    for h in ("driver", "terminal state", "worker outcome", "cycles"):
        table.add_column(h, justify="right" if h == "cycles" else "left")
    for d in rows:
        table.add_row(f"[bold]{dash(d['driver'])}[/]", "[dim]all[/]", "", str(d["total"]))
        if d["in_flight"]:
            table.add_row("", "[cyan]in flight[/]", "", str(d["in_flight"]))
        for st in sorted(d["by_state"]):
            for outcome, n in sorted(d["by_state"][st].items()):
                table.add_row("", dash(st), dash(outcome), str(n))
    console.print(table)


@app.command("costs")
def costs(
    ctx: typer.Context,
    by: Annotated[
        str, typer.Option(help=f"Group by any of {','.join(GROUP_KEYS)} (comma-separated).")
    ] = "agent",
    since: SinceOpt = None,
    until: UntilOpt = None,
    top: Annotated[
        int, typer.Option(min=0, max=100, help="Also list the N most expensive sessions and trees.")
    ] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Tokens by kind, cost and cache-hit ratio over OpenCode sessions and Claude CLI runs."""
    keys = [k.strip() for k in by.split(",") if k.strip()]
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        fail(f"--by {bad[0]!r} is not one of {', '.join(GROUP_KEYS)}", 2)
    t0, t1 = window(since, until)
    with read_store(ctx) as db:
        out = cost_breakdown(db, keys, t0, t1)
        if top:
            out["top_sessions"] = most_expensive_sessions(db, t0, t1, top)
            out["top_trees"] = most_expensive_trees(db, t0, t1, top)
    if as_json:
        print_json(out)
        return
    table = Table(title="costs", title_justify="left", show_footer=True)
    cols = [
        "source",
        *keys,
        "count",
        "input",
        "output",
        "reasoning",
        "cache read",
        "cache write",
        "hit",
        "cost",
    ]
    tot = out["totals"]
    feet = {
        "source": "total",
        "count": str(tot["count"]),
        "input": num(tot["tokens"]["input"]),
        "output": num(tot["tokens"]["output"]),
        "reasoning": num(tot["tokens"]["reasoning"]),
        "cache read": num(tot["tokens"]["cache_read"]),
        "cache write": num(tot["tokens"]["cache_write"]),
        "hit": ratio(tot["cache_hit_ratio"]),
        "cost": money(tot["cost_usd"]),
    }
    for c in cols:
        table.add_column(c, footer=feet.get(c, ""), justify="left" if c in ("source", *keys) else "right")
    for r in out["rows"]:
        tk = r["tokens"]
        table.add_row(
            r["source"],
            *(dash(r[k]) for k in keys),
            str(r["count"]),
            num(tk["input"]),
            num(tk["output"]),
            num(tk["reasoning"]),
            num(tk["cache_read"]),
            num(tk["cache_write"]),
            ratio(r["cache_hit_ratio"]),
            money(r["cost_usd"]),
        )
    console.print(table)
    if top:
        st = Table(title="most expensive sessions", title_justify="left")
        for h in ("session", "agent", "model", "title", "cost"):
            st.add_column(h, justify="right" if h == "cost" else "left")
        for s in out["top_sessions"]:
            cells = (dash(s[k]) for k in ("session_id", "agent", "model", "title"))
            st.add_row(*cells, money(s["cost_usd"]))
        console.print(st)
        tt = Table(title="most expensive trees", title_justify="left")
        for h in ("root", "agent", "title", "sessions", "own", "tree"):
            tt.add_column(h, justify="right" if h in ("sessions", "own", "tree") else "left")
        for t in out["top_trees"]:
            tt.add_row(
                dash(t["session_id"]),
                dash(t["agent"]),
                dash(t["title"]),
                str(t["subtree_session_count"]),
                money(t["cost_usd"]),
                money(t["subtree_cost_usd"]),
            )
        console.print(tt)
