"""The conversation behind one Claude Code CLI run (`octel runs add`, `POST /api/v1/agent-runs`),
archived from its transcript or from the stream-json text the run printed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from sqlalchemy.engine import Engine

from archiver.claude.layout import session_files
from archiver.claude.loading import load_tree
from archiver.claude.prices import use_price_file
from archiver.claude.stream import is_stream_json, tree_from_stream
from archiver.claude.tree import ClaudeTree
from telemetry.services.claude.importer import archive_claude
from telemetry.settings import Settings

if TYPE_CHECKING:  # the archiving API loads the OpenCode client and watcher: only when used
    from telemetry.archiving import ArchiveOutcome

__all__ = ["archive_run"]


def archive_run(
    text: str,
    session_id: str | None,
    *,
    claude_dir: Path | None,
    settings: Settings,
    engine: Engine,
    label: str | None = None,
) -> ArchiveOutcome | None:
    """Archive the conversation behind a CLI run: its transcript when ``claude_dir`` holds it
    (full usage, subagents' own files), else the stream-json text itself; None when there is
    neither (a ``--output-format json`` result whose transcript is elsewhere). A server, which
    cannot see the dispatcher's transcripts, passes no ``claude_dir``. Never raises: the run
    is stored already, and a conversation no reader foresaw is an error of its outcome."""
    use_price_file(settings.price_file)
    try:
        tree = _tree_of_run(text, session_id, claude_dir)
    except Exception as exc:
        from telemetry.archiving import ArchiveOutcome

        return ArchiveOutcome(session_id or "unknown-session", errors=[f"{type(exc).__name__}: {exc}"])
    return archive_claude(tree, settings=settings, engine=engine, label=label) if tree else None


def _tree_of_run(text: str, session_id: str | None, claude_dir: Path | None) -> ClaudeTree | None:
    data = text.encode()
    stream = tree_from_stream(data) if is_stream_json(data) else None
    if stream is not None and not any(s.messages for s in stream.sessions):
        stream = None if not stream.results else stream  # a bare result line: no conversation
    sid = session_id or (stream.root_id if stream else "")
    files = session_files(claude_dir, sid) if claude_dir is not None else None
    if files is not None:
        tree = load_tree(files)
        if stream is not None:
            tree.results = stream.results
        elif text.lstrip().startswith("{"):
            try:
                result = orjson.loads(data)
            except orjson.JSONDecodeError:
                result = None
            tree.results = [result] if isinstance(result, dict) else []
    elif stream is not None and any(s.messages for s in stream.sessions):
        tree = stream
    else:
        return None
    return tree
