"""How `octel sessions show` and `octel sessions tree` draw a session: record, turns, findings, tree."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from cli.tables import dash, money, num, seconds, when
from telemetry.queries.models import SessionDetail, TreeNode

__all__ = ["session_view", "tree_view"]


def _tree_label(n: TreeNode) -> str:
    own, sub = money(n.cost_usd), money(n.subtree_cost_usd)
    colour = {"stuck": "red", "suspect": "yellow"}.get(n.verdict, "green")
    return (
        f"[bold]{dash(n.session_id)}[/] {dash(n.agent)} [dim]{dash(n.title)}[/] "
        f"[{colour}]{n.verdict}[/] own {own} · tree {sub} · {num(n.subtree_tokens_total)} tok"
    )


def tree_view(node: TreeNode, into: Tree | None = None) -> Tree:
    """A node of `session_tree` and its children as a rich tree, own and rolled-up cost on each."""
    branch = Tree(_tree_label(node)) if into is None else into.add(_tree_label(node))
    for c in node.children:
        tree_view(c, branch)
    return branch


def session_view(got: SessionDetail) -> list[RenderableType]:
    """The session detail (the same model `/api/sessions/{id}` answers) as the terminal shows it."""
    out: list[RenderableType] = []
    s = got.session
    rec = Table.grid(padding=(0, 2))
    rec.add_column(style="bold")
    rec.add_column()
    for k in ("session_id", "title", "agent", "model", "label", "cycle_id", "verdict", "worst_detector"):
        rec.add_row(k, dash(getattr(s, k)))
    rec.add_row("parent / root", f"{dash(s.parent_session_id)} / {s.root_session_id}")
    rec.add_row("created / archived", f"{when(s.created_at)} / {when(s.archived_at)}")
    rec.add_row("duration", seconds(s.duration_s) + (" (in flight)" if s.in_flight else ""))
    rec.add_row("turns / messages", f"{s.turn_count} / {s.message_count}")
    tk = s.tokens
    rec.add_row(
        "tokens",
        f"in {num(tk.input)} · out {num(tk.output)} · reasoning {num(tk.reasoning)} · "
        f"cache read {num(tk.cache_read)} · cache write {num(tk.cache_write)}",
    )
    rec.add_row("cost own / tree", f"{money(s.cost_usd)} / {money(got.tree.subtree_cost_usd)}")
    if s.error_kind:
        rec.add_row("error", dash(s.error_kind))
    rec.add_row("archive", dash(s.archive_path))
    out.append(rec)
    if got.per_turn:
        t = Table(title="turns", title_justify="left")
        heads = ("#", "model", "in", "out", "reason", "cache r", "cache w", "cost", "tools", "took")
        for h in (*heads, "finish", "error"):
            t.add_column(h, justify="left" if h == "model" else "right" if h in heads else "left")
        for i, turn in enumerate(got.per_turn):
            t.add_row(
                str(i + 1),
                dash(turn.model),
                num(turn.tokens_input),
                num(turn.tokens_output),
                num(turn.tokens_reasoning),
                num(turn.tokens_cache_read),
                num(turn.tokens_cache_write),
                money(turn.cost_usd),
                str(turn.tool_calls),
                seconds(turn.duration_s),
                "in flight" if turn.in_flight else dash(turn.finish),
                dash(turn.error),
            )
        out.append(t)
    elif got.archive.error:
        out.append(Text.from_markup(f"[yellow]no per-turn data:[/] {dash(got.archive.error)}"))
    if got.findings:
        ft = Table(title="findings", title_justify="left")
        for h in ("detector", "verdict", "score", "from message", "source"):
            ft.add_column(h)
        for f in got.findings:
            ft.add_row(f.detector, f.verdict, f"{f.score:.2f}", str(f.start_index), f.source)
        out.append(ft)
    if got.tree.children:
        out.append(tree_view(got.tree))
    return out
