"""`octel asks`: the permission asks live sessions wait on, and answering one (allow once or
reject) on the OpenCode server that owns the session, audited in `octel actions list`."""

from __future__ import annotations

import asyncio
import getpass
import socket
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cli.app import app, console, fail, open_store, print_json, settings_of
from cli.output import Output, emit, output_options
from cli.tables import dash
from telemetry.queries.live import LivePage, age_text
from telemetry.tower.asks import AskRefused, pending_live_asks, reply_to_ask
from tower.answer import DECISIONS

__all__ = ["asks_app"]

asks_app = typer.Typer(
    rich_markup_mode=None, help="Permission asks live sessions wait on: list, answer.", no_args_is_help=True
)
app.add_typer(asks_app, name="asks")


@asks_app.command("list")
@output_options
def asks_list(ctx: typer.Context, output: Output = Output.table) -> None:
    """Live sessions waiting on a permission ask now (as octel watch sees them), longest wait
    first: the session, the permission and its patterns, how long it has waited."""
    with open_store(settings_of(ctx)) as engine:
        items = pending_live_asks(engine)
    page = LivePage(items=items, counts={"waiting_permission": len(items)})
    emit(output, page, items, lambda: _table(page))


def _table(page: LivePage) -> None:
    table = Table(title=f"asks waiting ({len(page.items)})", title_justify="left")
    table.add_column("session", no_wrap=True)
    for h in ("waited", "permission", "patterns", "title"):
        table.add_column(h)
    for r in page.items:
        ask = r.ask
        assert ask is not None  # pending_live_asks keeps only rows with an ask
        table.add_row(
            r.session_id,
            age_text(ask.waited_s),
            ask.permission,
            escape(", ".join(ask.patterns[:3])) or "-",
            escape(dash(r.title)),
        )
    console.print(table)


@asks_app.command("reply")
def asks_reply(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The live session waiting on an ask.")],
    decision: Annotated[str, typer.Argument(metavar="allow|reject", help="allow once, or reject.")],
    request: Annotated[
        str | None, typer.Option(metavar="ID", help="The ask to answer (default: the one it waits on).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
) -> None:
    """Answer the permission ask a live session waits on: allow it once or reject it, on the
    OpenCode server that owns the session, after checking it is still pending there. Audited:
    octel actions list shows who answered. Exit 1 when the ask is gone or the server failed."""
    if decision not in DECISIONS:
        fail(f"DECISION must be allow or reject, not {decision!r}", 2)
    settings = settings_of(ctx)
    by = f"octel asks reply ({getpass.getuser()}@{socket.gethostname()})"
    with open_store(settings) as engine:
        try:
            out = asyncio.run(reply_to_ask(settings, engine, session, decision, by=by, request_id=request))
        except AskRefused as refused:
            if as_json and refused.reply is not None:
                print_json(refused.reply)
            fail(refused.message, 1)
    if as_json:
        print_json(out)
    else:
        verb = "allowed once" if decision == "allow" else "rejected"
        console.print(f"{verb} ask {out.request_id} of {out.session_id} on {out.server}", highlight=False)
