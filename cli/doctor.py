"""`octel doctor`: settings, store, schema, archive folder, OpenCode server, OTLP endpoint, token file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import httpx
import typer
from rich.markup import escape

from cli.app import app, console, fail, open_store, print_json, settings_of
from telemetry.doctor import run_checks
from telemetry.store.db import make_engine

if TYPE_CHECKING:  # the repair's modules load only when `--repair` runs
    from telemetry.services.index.archive_repair import RepairDoc

    class Repaired(RepairDoc):
        spend: dict[str, int]  # `rebuild_spend`: what it set again


__all__ = ["doctor"]

_MARK = {"ok": "[green]ok  [/]", "warn": "[yellow]warn[/]", "fail": "[red]fail[/]"}


@app.command("doctor")
def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First point index rows whose file is gone at the session's newest valid file "
            "(or remove them), remove temporary files of dead writers, and set each session's "
            "driver from its cycles and the daily spend summary from the sessions again.",
        ),
    ] = False,
) -> None:
    """Check that octel can work here and say what to fix; exit 1 if a check fails."""
    settings = settings_of(ctx)
    repaired = _repair(settings) if repair else None
    with httpx.Client() as client:
        checks = run_checks(settings, make_engine, client)
    failed = [c for c in checks if c.status == "fail"]
    if as_json:
        print_json({"ok": not failed, "checks": [c.as_dict() for c in checks], "repaired": repaired})
    else:
        if repaired is not None:
            console.print(
                f"repaired: {len(repaired['repointed'])} rows pointed at another file, "
                f"{len(repaired['removed'])} rows removed, "
                f"{repaired['stale_parts_removed']} temporary files removed, "
                f"{repaired['spend']['drivers_changed']} session drivers set again, "
                f"{repaired['spend']['groups']} daily spend groups rewritten",
                highlight=False,
            )
        for c in checks:
            console.print(f"{_MARK[c.status]} {c.name:<16} {escape(c.detail)}", highlight=False)
            if c.fix:
                console.print(f"     {'':<16} [bold]fix:[/] {escape(c.fix)}", highlight=False)
        console.print("all good" if not failed else f"{len(failed)} check(s) failed", highlight=False)
    if failed:
        raise typer.Exit(1)


def _repair(settings: Any) -> Repaired:
    from telemetry.archiving import redactor_for
    from telemetry.services.index.archive_repair import repair_index
    from telemetry.services.spend.spend_repair import rebuild_spend
    from telemetry.store.db import session_scope

    try:
        redactor = redactor_for(settings)
    except (ValueError, OSError) as exc:
        fail(f"cannot repair: {exc}", 2)
    with open_store(settings) as engine:
        out = repair_index(engine, settings, redactor)
        with session_scope(engine) as db:
            spend = rebuild_spend(db)
        return {**out, "spend": spend}
