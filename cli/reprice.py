"""`octel costs --reprice`: price the stored OpenCode archives again before the costs are read."""

from __future__ import annotations

import typer

from cli.app import err_console, open_redactor, open_store, settings_of

__all__ = ["reprice_stored"]


def reprice_stored(ctx: typer.Context) -> bool:
    """Reprice every stored OpenCode tree, saying on stderr what was done (stdout stays the
    costs' own); False when a tree could not be repriced."""
    from archiver.claude.prices import price_source
    from telemetry.services.spend.reprice import reprice_archives

    settings = settings_of(ctx)
    redactor = open_redactor(settings)
    with open_store(settings) as engine:
        report = reprice_archives(engine, settings, redactor)
    src = price_source()
    by = f"{src['source']} {src['version']}" + (" and the price file" if src["price_file"] else "")
    err_console.print(
        f"repriced {report.repriced} of {report.sessions} OpenCode sessions ({report.trees} trees) by {by}",
        highlight=False,
    )
    if report.unpriced_models:
        err_console.print(
            f"unpriced (no price known): {', '.join(sorted(report.unpriced_models))}", highlight=False
        )
    for bad in report.failed:
        err_console.print(f"not repriced: tree of {bad['session_id']}: {bad['error']}", highlight=False)
    return not report.failed
