"""`octel runs add` (a Claude Code CLI result, from a file or a pipe) and `octel runs list`.

A dispatcher pipes the CLI straight in:
`claude -p "…" --output-format json | octel runs add - --task T --agent A --exit-code $?`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.app import app, console, fail, open_redactor, open_store, print_json, settings_of
from cli.fit import Col, fitted_table
from cli.output import JsonOpt, Output, emit, output_options
from cli.tables import dash, money, num, print_page, read_store, seconds, when, window
from telemetry.queries.fleet_models import RunPage
from telemetry.queries.paging import CursorError
from telemetry.queries.runs import RunFilter, list_runs

# What only `runs add` uses (the ingest, the Claude archiver) is imported by it: `runs list`
# pays for its query alone (`console` makes rich only when it first prints).

__all__ = ["runs_app"]

runs_app = typer.Typer(
    rich_markup_mode=None, help="Claude Code CLI runs: record a result, list them.", no_args_is_help=True
)
app.add_typer(runs_app, name="runs")


def _read(source: str) -> str:
    if source == "-":
        try:
            return sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            fail("standard input is not UTF-8 text; pipe the output of `claude -p … --output-format json`", 2)
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"no such file {source!r}", 2)
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {source!r}: {e}", 2)


@runs_app.command("add")
def runs_add(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="File with the CLI's JSON (or stream-json) output; - for stdin.")
    ] = "-",
    task: Annotated[str | None, typer.Option(help="What the run was for (an issue, a branch).")] = None,
    agent: Annotated[str | None, typer.Option(help="Which agent or role ran it.")] = None,
    exit_code: Annotated[int | None, typer.Option(help="The CLI's exit status.")] = None,
    claude_dir: Annotated[
        Path | None,
        typer.Option(
            help="Claude Code's config folder, to archive the run's transcript from "
            "(default: $CLAUDE_CONFIG_DIR, else ~/.claude)."
        ),
    ] = None,
    archive: Annotated[
        bool, typer.Option("--archive/--no-archive", help="Archive the run's conversation and link it.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Record one Claude Code CLI run from its `--output-format json` (or stream-json) result.
    With stream-json, or when the run's transcript is in the config folder, the conversation is
    archived (subagents included) and linked to the run by its session id."""
    from pydantic import ValidationError

    from archiver.claude.layout import default_config_dir
    from archiver.claude.result import ClaudeResultError
    from telemetry.queries.fleet_models import RunAdded
    from telemetry.queries.runs import run_record
    from telemetry.services.claude.runs import archive_run
    from telemetry.services.ingest.ingest import AgentRunIn, add_agent_run
    from telemetry.store.db import session_scope
    from telemetry.timeutil import utcnow

    text = _read(source)
    now = utcnow()
    if not text.strip():
        if not exit_code:
            fail("the input is empty; pipe the output of `claude -p … --output-format json`", 2)
        # The CLI died before printing a result: keep the failed run rather than lose it.
        result: dict[str, object] | str = {
            "type": "result",
            "subtype": "error_no_result",
            "is_error": True,
            "octel_note": f"no result printed; exit code {exit_code}",
            "octel_recorded_at": now.isoformat(),
            "octel_task": task,
        }
    else:
        result = text
    try:
        payload = AgentRunIn(task=task, agent=agent, exit_code=exit_code, result=result)
    except ValidationError as e:
        first = e.errors()[0]
        fail(f"{'.'.join(map(str, first['loc'])) or 'input'}: {first['msg']}", 2)
    redactor = open_redactor(settings_of(ctx))
    with open_store(settings_of(ctx)) as engine:
        try:
            with session_scope(engine) as db:
                row, created = add_agent_run(db, payload, now, redactor=redactor)
                out = run_record(row)
        except ClaudeResultError as e:
            fail(f"not a Claude CLI result: {e}", 2)
        kept = None
        if archive and isinstance(result, str):
            folder = (claude_dir or default_config_dir()).expanduser()
            got = archive_run(
                result,
                out.session_id,
                claude_dir=folder,
                settings=settings_of(ctx),
                engine=engine,
                label=task,
            )
            kept = got.to_dict() if got is not None else None
    if as_json:
        print_json(RunAdded.model_validate({"created": created, "run": out, "archive": kept}))
        return
    state = "recorded" if created else "already recorded"
    console.print(
        f"{state} run {out.run_key}: {dash(out.subtype)}, {dash(out.num_turns)} turns, "
        f"{money(out.cost_usd)}, exit {dash(out.exit_code)}",
        highlight=False,
        soft_wrap=True,
    )
    if kept is not None:
        console.print(
            f"archived session {kept['root_session_id']}: {kept.get('sessions', 0)} sessions, "
            f"{'complete' if kept['ok'] else 'with problems'}",
            highlight=False,
            soft_wrap=True,
        )


@runs_app.command("list")
@output_options
def runs_list(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    errors: Annotated[bool, typer.Option("--errors", help="Only runs that ended in an error.")] = False,
    since: Annotated[
        str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Only before this long ago or an ISO time.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="Rows per page.")] = 50,
    cursor: Annotated[
        str | None, typer.Option(help="Continue after the page that printed this cursor.")
    ] = None,
    output: Output = Output.table,
) -> None:
    """Claude Code CLI runs, newest first."""
    t0, t1 = window(since, until)
    with read_store(ctx) as db:
        try:
            page = list_runs(db, RunFilter(agent, task, errors, t0, t1, limit, cursor))
        except CursorError as e:
            fail(str(e), 2)
    emit(output, page, page.items, lambda: _runs_table(page))


# Decisive columns first; the rest go when the terminal is narrow, the highest rank first.
_RUN_COLS = (
    Col("recorded", rank=3),
    Col("task", flex=True),
    Col("agent", rank=4),
    Col("model", rank=5),
    Col("subtype"),
    Col("exit", right=True, rank=2),
    Col("turns", right=True, rank=6),
    Col("duration", right=True, rank=1),
    Col("tokens", right=True, rank=7),
    Col("cost", right=True),
)


def _runs_table(page: RunPage) -> None:

    rows = []
    for r in page.items:
        subtype = dash(r.subtype)
        rows.append(
            (
                when(r.created_at),
                dash(r.task),
                dash(r.agent),
                dash(r.model),
                f"[red]{subtype}[/]" if r.is_error else subtype,
                dash(r.exit_code),
                dash(r.num_turns),
                seconds(r.duration_ms / 1000 if r.duration_ms is not None else None),
                num(r.tokens.total),
                money(r.cost_usd),
            )
        )
    print_page(fitted_table(console, "claude runs", _RUN_COLS, rows), page.next_cursor)
