"""The Python API for dispatchers: archive a session tree and index it, never raising; follow
servers as `octel watch` does.

    from telemetry.archiving import archive_session_tree
    outcome = archive_session_tree("ses_…", settings=Settings(), label="nightly",
                                   secret_values=["…"], delete_after=True)
    if not outcome.ok: log(outcome.errors)

``archive_session_tree`` (and ``…_async``) live in ``telemetry.tree_archiving``, which says
when a tree may be deleted; ``watch_server`` and ``watch_servers`` in
``telemetry.tower.server_watch``. This module only gathers them, so neither imports the other's
callers.
"""

from __future__ import annotations

from telemetry.services.redaction import redactor_for
from telemetry.tower.server_watch import watch_server, watch_servers
from telemetry.tree_archiving import ArchiveOutcome, archive_session_tree, archive_session_tree_async

__all__ = [
    "ArchiveOutcome",
    "archive_session_tree",
    "archive_session_tree_async",
    "redactor_for",
    "watch_server",
    "watch_servers",
]
