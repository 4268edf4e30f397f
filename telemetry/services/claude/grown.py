"""Sessions that grew since the last import, read from where their files stopped.

For each session whose state kept where its read stopped (``archiver.claude.resume``), the
documents its index rows name are read from the archive store and the lines its files gained
are merged into them (``archiver.claude.loading.load_grown``); the tree is then prepared like
any other (built, serialised, redacted: the archived text again, whose placeholders stay as
they are, and the new text for the first time). A session that cannot be resumed (a file
rewritten or shorter, a document missing or unreadable) is handed back to be read whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from archiver.batch import Prepared
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.layout import SessionFiles
from archiver.claude.loading import load_grown, resume_state
from archiver.claude.resume import Namer
from archiver.files import parse_archive
from archiver.redact import Redactor
from archiver.store import ArchiveStore
from telemetry.services.claude.state import resume_of
from telemetry.store.models import SessionIndex

__all__ = ["grown_trees"]

_SI = SessionIndex.__table__  # type: ignore[attr-defined]
_CHUNK = 500


def _archived(engine: Engine, roots: Sequence[str]) -> dict[str, list[str]]:
    """Root session id -> the archive names of its tree's index rows."""
    out: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for i in range(0, len(roots), _CHUNK):
            q = select(_SI.c.root_session_id, _SI.c.archive_path).where(
                _SI.c.root_session_id.in_(roots[i : i + _CHUNK]), _SI.c.source == "claude_code"
            )
            for root, path in conn.execute(q):
                out.setdefault(str(root), []).append(str(path))
    return out


def grown_trees(
    todo: Sequence[tuple[SessionFiles, str, Any]],
    state: Mapping[str, Any],
    name: Namer,
    *,
    engine: Engine,
    store: ArchiveStore,
    redactor: Redactor,
    label: str | None,
    whole: list[SessionFiles],
) -> Iterator[tuple[SessionFiles, Prepared]]:
    """Each session of ``todo`` that can be resumed (its ``state`` kept under ``name``),
    prepared from what its files gained; every other one is appended to ``whole``."""
    entries: list[tuple[SessionFiles, Mapping[str, Any]]] = []
    for files, key, _ in todo:
        if (resume := resume_of(state.get(key))) is not None:
            entries.append((files, resume))
        else:
            whole.append(files)
    names = _archived(engine, [f.session_id for f, _ in entries]) if entries else {}
    for files, resume in entries:
        try:
            docs = [parse_archive(store.read(n), n) for n in names.get(files.session_id, [])]
        except (OSError, ValueError):
            docs = []
        try:
            got = load_grown(files, resume, docs, name) if docs else None
        except Exception:  # what the lines gained could not be merged: read the files whole
            got = None
        if got is None:
            whole.append(files)
            continue
        tree, bases = got
        try:
            prepared = prepare_claude_tree(tree, redactor, label=label)
        except Exception:  # read whole: a session that cannot be is reported there, alone
            whole.append(files)
            continue
        prepared.resume = resume_state(tree, bases)
        yield files, prepared
