"""`octel sessions list|show|tree`: archived sessions, one session, its subagent tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.app import app, fail, settings_of
from cli.fit import Col, fitted_table
from cli.options import CursorOpt, LimitOpt, SinceOpt, UntilOpt
from cli.output import Output, emit, output_options
from cli.tables import archives_of, dash, money, num, print_page, read_store, seconds, when, window
from telemetry.queries.paging import CursorError
from telemetry.queries.sessions import (
    SESSION_VERDICTS,
    SessionFilter,
    list_sessions,
    session_tree,
)

# The live view, the session page and its trace link are imported by the commands that show
# them: `sessions list` (the command a dispatcher runs most) loads only the list query.
if TYPE_CHECKING:
    from telemetry.queries.models import SessionPage, TreeNode

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    rich_markup_mode=None,
    help="Archived sessions: list, one session, its subagent tree.",
    no_args_is_help=True,
)
app.add_typer(sessions_app, name="sessions")


# Decisive columns first; the rest go when the terminal is narrow, the highest rank first.
_LIST_COLS = (
    Col("session"),
    Col("title", flex=True),
    Col("source", rank=9),
    Col("agent", rank=5),
    Col("model", rank=6),
    Col("verdict"),
    Col("label", rank=8),
    Col("turns", right=True, rank=2),
    Col("tokens", right=True, rank=7),
    Col("cost", right=True),
    Col("tree cost", right=True, rank=1),
    Col("duration", right=True, rank=3),
    Col("archived", rank=4),
)


def _list_table(page: SessionPage) -> None:
    from cli.app import console

    rows = [
        (
            ("  " * min(s.depth, 3)) + dash(s.session_id),
            dash(s.title),
            "claude" if s.source == "claude_code" else f"opencode {s.opencode_generation or 1}",
            dash(s.agent),
            dash(s.model),
            s.verdict + (" (in flight)" if s.in_flight else ""),
            dash(s.label),
            str(s.turn_count),
            num(s.tokens_total),
            money(s.cost_usd),
            money(s.subtree_cost_usd),
            seconds(s.duration_s),
            when(s.archived_at),
        )
        for s in page.items
    ]
    print_page(fitted_table(console, "sessions", _LIST_COLS, rows), page.next_cursor)


@sessions_app.command("list")
@output_options
def sessions_list(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model (provider/model).")] = None,
    verdict: Annotated[
        str | None, typer.Option(help=f"Only this verdict: {', '.join(SESSION_VERDICTS)}.")
    ] = None,
    label: Annotated[str | None, typer.Option(help="Only this label.")] = None,
    source: Annotated[
        str | None, typer.Option(help="Only sessions of this agent program: opencode or claude_code.")
    ] = None,
    q: Annotated[str | None, typer.Option("--search", "-q", help="Text in the title or label.")] = None,
    root_only: Annotated[bool, typer.Option("--roots", help="Only root sessions.")] = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: LimitOpt = 50,
    cursor: CursorOpt = None,
    live: Annotated[bool, typer.Option("--live", help="Sessions running now, loudest first.")] = False,
    state: Annotated[str | None, typer.Option(help="With --live: only this state.")] = None,
    output: Output = Output.table,
) -> None:
    """Archived sessions, newest first; with --live, the sessions running now."""
    if live or state is not None:
        from cli.live import print_live_list

        with read_store(ctx) as db:
            print_live_list(db, state, output)
        return
    if verdict is not None and verdict not in SESSION_VERDICTS:
        choices = f"{', '.join(SESSION_VERDICTS[:-1])} or {SESSION_VERDICTS[-1]}"
        fail(f"--verdict must be {choices}, not {verdict!r}", 2)
    if source is not None and source not in ("opencode", "claude_code"):
        fail(f"--source must be opencode or claude_code, not {source!r}", 2)
    t0, t1 = window(since, until)
    f = SessionFilter(agent, model, verdict, label, t0, t1, q, root_only, limit, cursor, source)
    with read_store(ctx) as db:
        try:
            page = list_sessions(db, f)
        except CursorError as e:
            fail(str(e), 2)
    emit(output, page, page.items, lambda: _list_table(page))


@sessions_app.command("show")
@output_options
def sessions_show(ctx: typer.Context, session_id: str, output: Output = Output.table) -> None:
    """One session: its record, per-turn table (from the archive file), findings and tree.
    `--jsonl` and `--csv` print the per-turn rows."""
    from cli.app import console
    from cli.live import print_live_session
    from cli.session_view import session_view
    from telemetry.otel_export.links import trace_ref
    from telemetry.queries.session_detail import session_detail

    with read_store(ctx) as db:
        got = session_detail(db, session_id, archives_of(ctx, db))
        if got is None and print_live_session(db, session_id, output):
            return
    if got is None:
        fail(f"no archived session {session_id!r} (nor a live one)")
    settings = settings_of(ctx)
    got.trace = trace_ref(
        got.root_session_id, session_id, settings.otel_trace_url, settings.otel_service_name
    )

    def draw() -> None:
        for part in session_view(got):
            console.print(part, highlight=False)

    emit(output, got, got.per_turn or [], draw)


def _nodes(node: TreeNode) -> list[TreeNode]:
    """The tree's sessions depth first, for `--jsonl` and `--csv` (printed without `children`:
    each is a row of its own)."""
    return [node, *(n for c in node.children for n in _nodes(c))]


@sessions_app.command("tree")
@output_options
def sessions_tree(ctx: typer.Context, session_id: str, output: Output = Output.table) -> None:
    """The subagent tree under a session, with own and rolled-up cost."""
    from cli.app import console
    from cli.live import print_live_tree
    from cli.session_view import tree_view

    with read_store(ctx) as db:
        tree = session_tree(db, session_id)
        if tree is None and print_live_tree(db, session_id, output):
            return
    if tree is None:
        fail(f"no archived session {session_id!r} (nor a live one)")
    rows = _nodes(tree)
    emit(output, tree, rows, lambda: console.print(tree_view(tree)), exclude=frozenset({"children"}))
