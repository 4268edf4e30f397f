"""The live side of `octel sessions list|show|tree` and `octel why`: sessions that run now."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from cli.app import console, fail
from cli.output import Output, emit
from cli.tables import dash, money, num
from telemetry.queries.live import (
    LOUDEST_FIRST,
    LivePage,
    LiveSessionOut,
    age_text,
    get_live,
    list_live,
    live_tree,
)
from telemetry.timeutil import utcnow

__all__ = ["print_live_list", "print_live_session", "print_live_tree"]

_COLOUR = {
    "waiting_permission": "bold red",
    "retrying": "yellow",
    "unknown": "magenta",
    "errored": "red",
    "running_tool": "cyan",
    "compacting": "cyan",
    "busy": "green",
    "idle": "dim",
    "deleted": "dim",
}


def _state(r: LiveSessionOut) -> str:
    return f"[{_COLOUR.get(r.state, 'white')}]{r.state}[/]"


def print_live_list(db: object, state: str | None, output: Output) -> None:
    if state is not None and state not in LOUDEST_FIRST:
        fail(f"--state must be one of {', '.join(LOUDEST_FIRST)}, not {state!r}", 2)
    page = list_live(db, utcnow(), state=state)  # type: ignore[arg-type]
    emit(output, page, page.items, lambda: _list_table(page))


def _list_table(page: LivePage) -> None:
    counts = ", ".join(f"{k} {v}" for k, v in page.counts.items() if v)
    table = Table(title=f"live sessions ({counts or 'none'})", title_justify="left")
    width = max((len(r.session_id) for r in page.items), default=7)
    table.add_column("session", min_width=width, no_wrap=True)
    for h in ("state", "for", "what", "agent", "turns", "tokens", "cost", "verdict", "cycle"):
        table.add_column(h, justify="right" if h in ("for", "turns", "tokens", "cost") else "left")
    for r in page.items:
        table.add_row(
            dash(r.session_id),
            _state(r),
            age_text(r.state_age_s),
            escape(r.explanation.split(";")[0]),
            dash(r.agent),
            str(r.turns),
            num(sum(r.tokens.values())),
            money(r.cost_usd),
            r.verdict,
            dash(r.cycle_id),
        )
    console.print(table)


def print_live_session(db: object, session_id: str, output: Output) -> bool:
    """Print a live session; False when it is not live either."""
    r = get_live(db, session_id, utcnow())  # type: ignore[arg-type]
    if r is None:
        return False
    emit(output, {"live": r.model_dump(mode="json")}, [r], lambda: _session(r))
    return True


def _session(r: LiveSessionOut) -> None:
    console.print(f"[bold]{escape(r.session_id)}[/] {_state(r)}: {escape(r.explanation)}", highlight=False)
    t = Table(show_header=False, box=None)
    for k, v in (("title", r.title), ("server", r.server), ("agent", r.agent), ("model", r.model),
                 ("root", r.root_session_id), ("parent", r.parent_session_id), ("since", r.state_since),
                 ("last activity", r.last_activity_at), ("turns", r.turns), ("cost", money(r.cost_usd)),
                 ("cycle", f"{r.cycle_id} ({r.driver})" if r.cycle_id else None)):  # fmt: skip
        t.add_row(k, dash(v))
    console.print(t)
    for f in r.findings:
        det = escape(str(f.get("detector")))
        console.print(f"  finding [bold]{det}[/]: {f.get('verdict')}", highlight=False)


def print_live_tree(db: object, session_id: str, output: Output) -> bool:
    rows = live_tree(db, session_id, utcnow())  # type: ignore[arg-type]
    if not rows:
        return False
    nodes = [{"depth": d, **r.model_dump(mode="json")} for d, r in rows]
    emit(output, {"live": True, "sessions": nodes}, nodes, lambda: _tree(rows))
    return True


def _tree(rows: list[tuple[int, LiveSessionOut]]) -> None:
    for depth, r in rows:
        line = f"{'  ' * depth}{escape(r.session_id)} {_state(r)} {escape(r.explanation)}"
        console.print(line, highlight=False)
