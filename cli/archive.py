"""`octel archive`, `octel watch` and `octel import archives`."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from archiver.redact import RedactKeyError, load_key
from cli.app import (
    app,
    command_group,
    console,
    err_console,
    fail,
    open_store,
    print_json,
    settings_of,
)
from cli.output import JsonOpt
from telemetry.archiving import archive_session_tree_async, redactor_for
from telemetry.services.index.archive_import import archive_candidates, import_archives
from telemetry.tree_archiving import ArchiveOutcomeDoc

__all__ = ["import_app"]


import_app = command_group("import", "Bring existing data into the store.")

_SESSION_ID = re.compile(r"^ses_[A-Za-z0-9]{1,100}$")
ServerOpt = Annotated[str | None, typer.Option("--server", help="OpenCode URL (OCTEL_OPENCODE_URL).")]


def _check_redaction(settings: Any) -> None:
    path = settings.redact_file
    if path is not None and not path.is_file():
        fail(f"OCTEL_REDACT_FILE {path} is not a readable file", 2)
    try:
        load_key(settings.redact_key)
    except (RedactKeyError, OSError) as exc:
        fail(str(exc) if isinstance(exc, RedactKeyError) else f"cannot use {settings.redact_key}: {exc}", 2)


def _check_server(url: str) -> str:
    if not re.match(r"^https?://[^\s/]+", url):
        fail(f"--server must be an http(s) URL, not {url!r}", 2)
    return url.rstrip("/")


@app.command("archive")
def archive_cmd(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Root session id (ses_…); its subagents come along.")],
    server: ServerOpt = None,
    label: Annotated[str | None, typer.Option(help="Label kept with the archive (e.g. a cycle).")] = None,
    delete_after: Annotated[
        bool,
        typer.Option("--delete-after", help="Delete the tree on the server once every session is archived."),
    ] = False,
    compress: Annotated[
        bool, typer.Option("--gzip", help="Write .json.gz files (the database store compresses anyway).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Archive a session tree from OpenCode: every subagent, redacted, indexed in the store."""
    if not _SESSION_ID.match(session_id):
        fail(f"{session_id!r} is not an OpenCode session id (ses_ followed by letters and digits)", 2)
    settings = settings_of(ctx)
    _check_redaction(settings)
    url = _check_server(server or settings.opencode_url)
    spinner = console.status(f"archiving {session_id} from {url} …", spinner="dots")
    with open_store(settings) as engine, spinner if not as_json else contextlib.nullcontext():
        outcome = asyncio.run(
            archive_session_tree_async(
                session_id,
                settings=settings,
                engine=engine,
                server_url=url,
                label=label,
                delete_after=delete_after,
                compress=compress,
            )
        )
    data = outcome.to_dict()
    nothing = outcome.result is None or not outcome.result.sessions_found
    if as_json:
        print_json(data)
    elif not nothing:
        _render(data)
    if nothing:
        errs = data.get("walk_errors") or []
        why = next((e["message"] for e in errs if e.get("session_id")), None) or (
            errs[0]["message"] if errs else "; ".join(outcome.errors) or "no session"
        )
        fail(f"nothing archived from {url}: {why}")
    if not outcome.ok:
        raise typer.Exit(1)


def _render(d: ArchiveOutcomeDoc) -> None:
    t = Table(title=f"archive of {d['root_session_id']}", show_header=False)
    t.add_row("complete", "yes" if d.get("complete") else "[red]no[/]")
    t.add_row("sessions", str(d.get("sessions", 0)))
    t.add_row("messages", str(d.get("messages", 0)))
    t.add_row("files", "\n".join(d.get("files", [])) or "-")
    if d.get("kept"):
        t.add_row("kept", "\n".join(d["kept"]) + "\n[yellow](messages not fetched: older archive kept)[/]")
    red = d.get("redaction") or {}
    t.add_row("redacted", ", ".join(f"{k} {v}" for k, v in red.items()) or "nothing")
    idx = d.get("indexed", {})
    t.add_row("indexed", f"{idx.get('new', 0)} new, {idx.get('updated', 0)} updated")
    if d.get("deleted"):
        t.add_row("deleted", "yes")
    if d.get("delete_error"):
        t.add_row("deleted", f"[yellow]{d['delete_error']}[/]")
    console.print(t)
    for e in d.get("walk_errors", []):
        err_console.print(
            f"[yellow]walk:[/] {e['error_kind']} {e['what']} "
            f"{e.get('session_id') or ''} {e.get('message', '')}",
            highlight=False,
        )
    for msg in [*d.get("write_errors", []), *d.get("errors", [])]:
        err_console.print(f"[red]error:[/] {msg}", highlight=False)


@import_app.command("archives")
def import_archives_cmd(
    ctx: typer.Context,
    folder: Annotated[
        Path,
        typer.Argument(
            help="Folder of archive files (schema v1-v4), OpenCode exports, run logs and event "
            "captures (.json, .jsonl, .ndjson, gzipped or not)."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Index existing archive files into the store, file by file (re-importing updates, never
    duplicates). A bad file is reported and skipped; files from outside the archive folder
    are copied into it, redacted (with OCTEL_ARCHIVE_STORE=database every file is loaded into
    the database). OpenCode exports (1.x, and OpenCode 2's export route: schema v4), `opencode
    run --format json` logs and event captures (OpenCode 2's `/api/event` too) are archived
    first; exports are linked into trees by their parents."""
    if not folder.is_dir():
        fail(f"{folder} is not a folder", 2)
    settings = settings_of(ctx)
    _check_redaction(settings)
    redactor = redactor_for(settings)
    total = len(archive_candidates(folder))
    with (
        open_store(settings) as engine,
        Progress(
            TextColumn("importing"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            disable=as_json,
        ) as bar,
    ):
        task = bar.add_task("import", total=total)
        report = import_archives(engine, folder, settings, redactor, lambda n: bar.advance(task, n))
    data = report.to_dict()
    if as_json:
        print_json(data)
    else:
        console.print(
            f"{data['files']} files: {data['new']} new, {data['updated']} updated, "
            f"{data['copied']} copied into the archive folder, {len(data['failed'])} skipped",
            highlight=False,
        )
        for f in data["failed"]:
            err_console.print(f"[yellow]skipped[/] {f['file']}: {f['error']}", highlight=False)
    if data["failed"]:
        raise typer.Exit(1)
