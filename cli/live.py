"""The live side of `octel sessions list|show|tree` and `octel why`: sessions that run now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.shape import RawJson
from cli.app import console, fail
from cli.fit import Col, fitted_table
from cli.output import Output, emit
from cli.tables import dash, money, num
from telemetry.queries.live import (
    LOUDEST_FIRST,
    LivePage,
    LiveSessionOut,
    age_text,
    list_live,
    opencode_text,
)
from telemetry.timeutil import utcnow

# A live session's page, its messages and rich are imported where they are shown: the live list
# in JSON needs none of them.
if TYPE_CHECKING:
    from telemetry.queries.live_detail import LiveTreeNode
    from telemetry.queries.live_messages import LiveMessagePage
    from telemetry.queries.models import MessageView

__all__ = ["print_live_list", "print_live_session", "print_live_tree"]

_COLOUR = {
    "waiting_permission": "bold red",
    "retrying": "yellow",
    "unknown": "magenta",
    "errored": "red",
    "interrupted": "yellow",
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


_LIST_COLS = (
    Col("session"),
    Col("title", flex=True),
    Col("state"),
    Col("for", right=True),
    Col("what", flex=True, rank=1),
    Col("agent", rank=5),
    Col("turns", right=True, rank=4),
    Col("tokens", right=True, rank=5),
    Col("cost", right=True, rank=2),
    Col("verdict", rank=3),
    Col("cycle", rank=6),
    Col("opencode", rank=7),
)


def _list_table(page: LivePage) -> None:
    from rich.markup import escape

    counts = ", ".join(f"{k} {v}" for k, v in page.counts.items() if v)
    rows = [
        (
            dash(r.session_id),
            dash(r.title),
            _state(r),
            age_text(r.state_age_s),
            escape(r.explanation.split(";")[0]),
            dash(r.agent or ("Claude Code" if r.source == "claude_code" else None)),
            str(r.turns),
            num(sum(r.tokens.values())),
            money(r.cost_usd),
            r.verdict,
            dash(r.cycle_id),
            opencode_text(r),
        )
        for r in page.items
    ]
    console.print(fitted_table(console, f"live sessions ({counts or 'none'})", _LIST_COLS, rows))


def print_live_session(db: object, session_id: str, output: Output) -> bool:
    """Print a live session and its messages so far; False when it is not live either."""
    from telemetry.queries.live_detail import LiveSessionShown, live_detail
    from telemetry.queries.live_messages import live_message_page

    got = live_detail(db, session_id, utcnow())  # type: ignore[arg-type]
    if got is None:
        return False
    r = got.live
    page = live_message_page(db, r.server, session_id, 0, 200)  # type: ignore[arg-type]
    answer = LiveSessionShown(live=r, tree=got.tree, messages=page)
    emit(output, answer, [r], lambda: _session(r, page))
    return True


def _said(m: MessageView) -> str:
    """One line for a message: its text, else what its tools do."""
    said: list[str] = []
    for p in m.parts:
        if p.get("type") == "text" and isinstance(p.get("text"), str) and p["text"].strip():
            said.append(p["text"].strip())
        elif p.get("type") == "tool":
            st: RawJson = p["state"] if isinstance(p.get("state"), dict) else {}
            inp: RawJson = st["input"] if isinstance(st.get("input"), dict) else {}
            what = inp.get("command") or inp.get("filePath") or inp.get("description") or ""
            said.append(f"[{p.get('tool')}{' ' + str(what) if what else ''}: {st.get('status', '?')}]")
    text = " ".join(" ".join(said).split())
    return text if len(text) <= 160 else text[:159] + "…"


def _messages(page: LiveMessagePage) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not page.items:
        console.print("no messages so far (the watcher stores them as they come)", style="dim")
        return
    earlier = f"; {page.earlier} earlier not kept, see the archive" if page.earlier else ""
    t = Table(title=f"messages so far ({page.total}{earlier})", title_justify="left")
    for h in ("#", "role", "at", "what"):
        t.add_column(h, justify="right" if h == "#" else "left")
    for m in page.items:
        role = (m.role or "-") + (" (in flight)" if m.in_flight else "")
        at = m.created_at[:19].replace("T", " ") if m.created_at else None
        t.add_row(str(m.index + 1), role, dash(at), escape(_said(m)) or "-")
    console.print(t)


def _session(r: LiveSessionOut, page: LiveMessagePage) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(f"[bold]{escape(r.session_id)}[/] {_state(r)}: {escape(r.explanation)}", highlight=False)
    t = Table(show_header=False, box=None)
    for k, v in (
        ("title", r.title),
        ("server", r.server),
        ("agent", r.agent or ("Claude Code" if r.source == "claude_code" else None)),
        ("model", r.model),
        ("root", r.root_session_id),
        ("parent", r.parent_session_id),
        ("since", r.state_since),
        ("last activity", r.last_activity_at),
        ("turns", r.turns),
        ("cost", money(r.cost_usd)),
        ("cycle", f"{r.cycle_id} ({r.driver})" if r.cycle_id else None),
    ):
        t.add_row(k, dash(v))
    console.print(t)
    for f in r.findings:
        det = escape(str(f.get("detector")))
        console.print(f"  finding [bold]{det}[/]: {f.get('verdict')}", highlight=False)
    _messages(page)


def print_live_tree(db: object, session_id: str, output: Output) -> bool:
    """The live tree: `--json` prints what `GET /api/live/{id}` answers, the rows one per session."""
    from telemetry.queries.live_detail import live_detail

    got = live_detail(db, session_id, utcnow())  # type: ignore[arg-type]
    if got is None:
        return False
    nodes = [{"depth": n.depth, **n.session.model_dump(mode="json")} for n in got.tree]
    emit(output, got, nodes, lambda: _tree(got.tree))
    return True


def _tree(tree: list[LiveTreeNode]) -> None:
    from rich.markup import escape

    for n in tree:
        r = n.session
        line = f"{'  ' * n.depth}{escape(r.session_id)} {_state(r)} {escape(r.explanation)}"
        console.print(line, highlight=False)
