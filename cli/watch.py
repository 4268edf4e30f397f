"""`octel watch`: follow one or more OpenCode servers, keep every session's live row, archive
each tree when it goes quiet."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from archiver.credentials import SERVICE, default_service_file, read_service
from archiver.urls import without_credentials
from cli.app import app, err_console, fail, open_redactor, open_store, settings_of
from telemetry.alerting import start_alerts
from telemetry.archiving import watch_servers
from telemetry.budget_rules import budgets_of, quotas_of
from telemetry.queries.live import LiveChange
from telemetry.settings import Settings
from telemetry.tower.budget_watch import BudgetWatch
from telemetry.tower.watching import rules_from
from tower.alert import Alert, AlertSink
from tower.watch import WatchConfig

__all__ = ["watch_cmd"]


def _service_url(settings: Settings) -> str:
    """The URL OpenCode 2's background service registered (its password comes with it)."""
    svc = read_service(settings.opencode_service_file)
    if svc is None:
        where = settings.opencode_service_file or default_service_file()
        fail(f"--server service: no OpenCode 2 service registration in {where} (is the service running?)", 2)
    return svc.url


@app.command("watch")
def watch_cmd(
    ctx: typer.Context,
    server: Annotated[
        list[str] | None,
        typer.Option(
            "--server",
            metavar="URL",
            help="OpenCode URL, or `service` for OpenCode 2's background service (its service.json); "
            "repeat for several (OCTEL_OPENCODE_URLS). Passwords: OCTEL_OPENCODE_PASSWORDS.",
        ),
    ] = None,
    label: Annotated[str | None, typer.Option(help="Label kept with each archive.")] = None,
    settle: Annotated[
        float, typer.Option(min=0, help="Seconds a tree must be quiet before it is archived.")
    ] = 2.0,
    poll_interval: Annotated[
        float, typer.Option(min=0.1, help="Seconds between polls when /event is unavailable.")
    ] = 2.0,
    probe_budget: Annotated[
        float, typer.Option(min=1, help="Wallclock budget of a run, in seconds.")
    ] = 3600.0,
    probe_after: Annotated[
        float, typer.Option(min=0, max=1, help="Share of the budget after which a busy tree is probed.")
    ] = 0.5,
    probe_interval: Annotated[float, typer.Option(min=1, help="Seconds between probes of one tree.")] = 60.0,
    abort_stuck: Annotated[
        bool,
        typer.Option("--abort-stuck/--no-abort-stuck", help="Abort a tree that a probe finds stuck."),
    ] = False,
    archive_existing: Annotated[
        bool,
        typer.Option("--archive-existing/--new-only", help="Also archive trees present at start."),
    ] = False,
    duration: Annotated[
        float | None, typer.Option("--for", min=0.1, help="Stop after this many seconds.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON line per state change of a session.")
    ] = False,
    claude_dir: Annotated[
        Path | None,
        typer.Option(help="Follow Claude Code transcripts in this config folder (with --server: both)."),
    ] = None,
    claude_cli: Annotated[
        str | None,
        typer.Option(
            metavar="PATH|off",
            help="Claude Code CLI asked for its sessions' states (`claude agents --json`); "
            "default: `claude` on PATH; off: the transcripts alone.",
        ),
    ] = None,
    claude_quiet: Annotated[
        float, typer.Option(min=0, help="Seconds a Claude Code session must be quiet before it is archived.")
    ] = 30.0,
    deny_asks_after: Annotated[
        str | None,
        typer.Option(metavar="DURATION", help="Reply reject to a permission ask unanswered this long (5m)."),
    ] = None,
    abort_retries_after: Annotated[
        int | None,
        typer.Option(metavar="N", min=1, help="Abort a session whose provider retry reached attempt N."),
    ] = None,
    on_stuck: Annotated[
        list[str] | None,
        typer.Option(metavar="DETECTOR=ACTION", help="abort or notify on a live stuck finding; repeatable."),
    ] = None,
    delete_archived_after: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION",
            help="Delete from the server the trees archived, verified and idle this long (7d); audited.",
        ),
    ] = None,
    janitor_every: Annotated[
        float, typer.Option(min=1, help="Seconds between passes of --delete-archived-after.")
    ] = 600.0,
) -> None:
    """Follow OpenCode servers: keep a live row for every session (busy, retrying, waiting on an
    ask, compacting, running a tool, idle, interrupted, errored, deleted, unknown), archive each root tree
    when it goes idle and again when it changes, recording status history and permission
    asks/replies; probe long runs. Rules that act (reject an ask, abort) are opt-in and audited
    (`octel actions list`), and so is deleting old trees archived and verified
    (--delete-archived-after, as `octel janitor` does). Watchers sharing a store follow each
    server one at a time (a lease); another takes over when one dies. With --claude-dir, follow
    Claude Code transcripts instead (both with --server too): live rows for the sessions
    running (busy, running a tool, needs input), archives of the quiet ones; their budgets and
    live rules only alert (the CLI cannot be stopped from outside)."""
    from cli.archive import _check_redaction, _check_server  # not at import: archive loads every command
    from telemetry.services.claude.importer import watch_claude
    from telemetry.services.index.search_catchup import start_catchup
    from telemetry.tower.claude_live import follow_claude_live

    settings = settings_of(ctx)
    _check_redaction(settings)
    if claude_dir is not None and not claude_dir.expanduser().is_dir():
        fail(f"{claude_dir} is not a folder; give Claude Code's config folder", 2)
    configured = [u.strip() for u in settings.opencode_urls.split(",") if u.strip()]
    urls: list[str] = []
    if claude_dir is None or server:
        urls = server or configured or [settings.opencode_url]
        urls = list(dict.fromkeys(_check_server(_service_url(settings) if u == SERVICE else u) for u in urls))
    config = WatchConfig(
        settle_seconds=settle,
        poll_interval=poll_interval,
        probe_budget_seconds=probe_budget,
        probe_after_share=probe_after,
        probe_interval_seconds=probe_interval,
        abort_on_stuck=abort_stuck,
        archive_existing=archive_existing,
    )
    try:
        rules = rules_from(
            settings,
            deny_asks_after=deny_asks_after,
            abort_retries_after=abort_retries_after,
            on_stuck=on_stuck or (),
        )
        budgets, quotas = budgets_of(settings), quotas_of(settings)
    except ValueError as exc:
        fail(str(exc), 2)
    janitor_after = None
    if delete_archived_after is not None:
        from cli.janitor import older_than_seconds

        janitor_after = older_than_seconds(delete_archived_after, "--delete-archived-after")

    def log(msg: str) -> None:
        err_console.print(f"[dim]watch[/] {escape(without_credentials(msg))}", highlight=False)

    # alerts are logged here; delivery to a channel is the sink's business
    spend = BudgetWatch(budgets, _LogSink(log), label=label, quotas=quotas, alert_only=not urls)
    cli_path = _claude_cli(claude_cli) if claude_dir is not None else None

    def changed(row: LiveChange) -> None:
        # the stored row, redacted, as `sessions list --live --json` gives it, and the state it left
        sys.stdout.write(row.model_dump_json() + "\n")
        sys.stdout.flush()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if duration is not None:
            loop.call_later(duration, stop.set)
        with open_store(settings) as engine:
            alerts = start_alerts(settings, engine, open_redactor(settings))
            catchup = start_catchup(settings, engine, open_redactor(settings))  # the search index
            # budget and quota alerts are said on the log and delivered like the rules' alerts
            spend.sink = spend.quotas.sink = _LogSink(log, alerts.sink)
            claude: list[asyncio.Task[object]] = []
            if claude_dir is not None:
                if not urls:  # no OpenCode watcher checks budgets: this one does, alert only
                    named = "; ".join(b.name for b in budgets) or "none"
                    log(f"budgets: {named} (alert only: Claude Code cannot be stopped from outside)")
                live = follow_claude_live(
                    claude_dir.expanduser().resolve(),
                    stop,
                    engine=engine,
                    redactor=open_redactor(settings),
                    interval=min(poll_interval, 1.0),  # a line on the board within seconds
                    cli=cli_path,
                    lease_seconds=settings.watch_lease_seconds,
                    rules=rules,
                    budgets=None if urls else spend,
                    sink=alerts.sink,  # the rules' alerts repeat each tick: the deliverer dedups
                    log=log,
                    on_change=changed if as_json else None,
                )
                claude.append(asyncio.create_task(live))
                claude.append(
                    asyncio.create_task(
                        watch_claude(
                            claude_dir.expanduser(),
                            stop,
                            settings=settings,
                            engine=engine,
                            quiet_seconds=claude_quiet,
                            interval=poll_interval,
                            label=label,
                            log=log,
                        )
                    )
                )
            ws = []
            if urls:
                cleans = (
                    f"; deleting trees archived and idle {delete_archived_after}"
                    if janitor_after is not None
                    else ""
                )
                named = "; ".join(b.name for b in budgets) or "none"
                log(
                    f"following {', '.join(urls)} (Ctrl-C stops); rules: {rules.describe()}; "
                    f"budgets: {named}{cleans}; alerts to: {alerts.describe()}"
                )
                ws = await watch_servers(
                    settings,
                    stop,
                    urls,
                    engine=engine,
                    label=label,
                    config=config,
                    log=log,
                    on_change=changed if as_json else None,
                    rules=rules,
                    lease_seconds=settings.watch_lease_seconds,
                    delete_archived_after=janitor_after,
                    janitor_every=janitor_every,
                    budgets=spend,
                    sink=alerts.sink,
                    alerts_to=alerts.describe() if alerts.channels else "",
                )
            for task in claude:
                await task
            await asyncio.to_thread(alerts.close)  # what is queued is sent first
            if catchup is not None:
                await asyncio.to_thread(catchup.close)
            log(
                f"stopped: {sum(w.archives for w in ws)} archive runs, {sum(w.probes for w in ws)} probes, "
                f"{sum(w.bad_events for w in ws)} malformed events skipped"
            )

    asyncio.run(main())


def _claude_cli(given: str | None) -> str | None:
    """The CLI to ask for its sessions' states: the one given, ``claude`` on PATH, or none."""
    import shutil

    if given is not None and given.strip().lower() == "off":
        return None
    found = shutil.which(given.strip() if given else "claude")
    if given and found is None:
        fail(f"--claude-cli: {given} is not an executable (give a path, or off)", 2)
    return found


class _LogSink:
    """Alerts said on the watcher's log (a person running `octel watch` reads them there)."""

    def __init__(self, log: Callable[[str], None], then: AlertSink | None = None) -> None:
        self._log = log
        self._then = then

    def emit(self, alert: Alert) -> None:
        self._log(f"alert {alert.kind} {alert.severity}: {alert.summary}")
        if self._then is not None:
            self._then.emit(alert)
