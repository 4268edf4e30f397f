"""`octel import claude [DIR]`: archive and index every Claude Code transcript under a config folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archiver.claude.layout import Found, default_config_dir, found_sessions
from archiver.claude.prices import use_price_file
from cli.app import command_group, console, err_console, fail, open_store, print_json, settings_of
from telemetry.services.claude.state import ClaudeImportReport, unchanged_report

if TYPE_CHECKING:
    from telemetry.services.claude.early import EarlyStart
    from telemetry.settings import Settings

__all__ = ["import_claude_cmd"]

import_app = command_group("import", "Bring existing data into the store.")


@import_app.command("claude")
def import_claude_cmd(
    ctx: typer.Context,
    config_dir: Annotated[
        Path | None,
        typer.Argument(
            metavar="DIR",
            help="Claude Code's config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude).",
        ),
    ] = None,
    label: Annotated[str | None, typer.Option(help="Label stored with each archived session.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    reprice: Annotated[
        bool,
        typer.Option(help="Read every session again, changed or not, to price it at the prices in use now."),
    ] = False,
) -> None:
    """Archive every Claude Code session (subagents included) found under DIR, redacted, scored and
    costed, and index it. Safe to run again: only sessions whose files changed are read."""
    folder = (config_dir or default_config_dir()).expanduser()
    if not folder.is_dir():
        fail(f"{folder} is not a folder; give Claude Code's config folder (with projects/ in it)", 2)
    settings = settings_of(ctx)
    use_price_file(settings.price_file)  # the state file names the prices it was priced at
    # nothing changed since the last import into this store: say so without loading the
    # archive writer or opening the store (a re-run is the common case under `watch`, cron)
    found = found_sessions(folder)  # looked for once, in this run
    report = (
        None
        if reprice
        else unchanged_report(folder, settings.data_dir, settings.db_url, settings.redact_key, found)
    )
    if report is None:
        report = _import(folder, settings, label, reprice, found)
    _print(report, folder, as_json)
    # a session left unarchived (unreadable, over the size limit, not written) fails the run;
    # a bad line inside an archived one is only reported, kept in its archive
    if report.sessions > report.archived + report.unchanged + report.still_writing + report.empty:
        raise typer.Exit(1)


def _import(
    folder: Path, settings: Settings, label: str | None, reprice: bool, found: Found
) -> ClaudeImportReport:
    from archiver.claude.pool import fewer_collections
    from telemetry.services.claude.early import start_early

    with fewer_collections():  # loading the store's modules and each batch's results
        # workers start on the first sessions while the store is opened (no file written before)
        early = start_early(folder, settings, label, reprice, found)
        try:
            return _import_into(folder, settings, label, early, reprice, found)
        finally:
            if early is not None:
                early.close()


def _import_into(
    folder: Path,
    settings: Settings,
    label: str | None,
    early: EarlyStart | None,
    reprice: bool,
    found: Found,
) -> ClaudeImportReport:
    from telemetry.services.claude.importer import import_claude

    with open_store(settings) as engine:
        if not _bar_shown():  # piped or redirected: the bar would be disabled, rich not loaded
            return import_claude(
                folder,
                settings=settings,
                engine=engine,
                label=label,
                early=early,
                reprice=reprice,
                found=found,
            )
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("sessions"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        # the bar goes to stderr, and only to a terminal, so --json and pipes stay clean
        with Progress(
            *columns, console=err_console, transient=True, disable=not err_console.is_terminal
        ) as bar:
            task = bar.add_task("sessions", total=None)
            report = import_claude(
                folder,
                settings=settings,
                engine=engine,
                label=label,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                early=early,
                reprice=reprice,
                found=found,
            )
    return report


def _bar_shown() -> bool:
    """Whether stderr may show a progress bar: a terminal, or rich told to treat it as one."""
    return sys.stderr.isatty() or any(k in os.environ for k in ("FORCE_COLOR", "TTY_INTERACTIVE"))


def _print(report: ClaudeImportReport, folder: Path, as_json: bool) -> None:
    if as_json:
        print_json(report)
        return
    from rich.markup import escape

    console.print(
        f"{report.sessions} sessions in {escape(str(folder))}: {report.archived} archived "
        f"({report.files_written} files, {report.indexed_new} new, {report.indexed_updated} updated), "
        f"{report.unchanged} unchanged"
        + (f", {report.empty} with no conversation (skipped)" if report.empty else ""),
        highlight=False,
        soft_wrap=True,
    )
    if report.cost_mismatches:
        console.print(
            f"[yellow]cost differs from what the CLI reported[/]: {', '.join(report.cost_mismatches[:10])}",
            highlight=False,
        )
    # what left a session unarchived first, then the lines skipped inside archived ones
    for p in sorted(report.problems, key=lambda p: p.get("what") == "line")[:10]:
        where = p.get("path") or p.get("session_id") or ""
        console.print(
            f"[yellow]{p.get('error_kind')}[/] {escape(str(where))}: {escape(str(p.get('message')))}"
        )
    if len(report.problems) > 10:
        console.print(f"… and {len(report.problems) - 10} more (see --json)")
