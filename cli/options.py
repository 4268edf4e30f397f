"""The paging and window options the query commands share, said once."""

from __future__ import annotations

from typing import Annotated

import typer

from telemetry.queries.sessions import MAX_LIMIT

__all__ = ["CursorOpt", "LimitOpt", "SinceOpt", "UntilOpt"]

SinceOpt = Annotated[str | None, typer.Option(help="Only since this long ago (24h, 7d) or an ISO time.")]
UntilOpt = Annotated[str | None, typer.Option(help="Only before this long ago or an ISO time.")]
LimitOpt = Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="Rows per page.")]
CursorOpt = Annotated[str | None, typer.Option(help="Continue after the page that printed this cursor.")]
