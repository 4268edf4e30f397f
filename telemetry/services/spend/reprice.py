"""Price stored OpenCode archives again (`octel costs --reprice`): after a genai-prices upgrade
or a change of the price file, and for sessions archived before octel priced the turns their
server recorded no cost for.

Tree by tree: every document of the tree is read from the archive store, the turns octel priced
are priced anew (``archiver.pricing.reprice_documents``; a cost the server recorded stays), and
each document that changed is put back under its own name, redacted again (placeholders stay as
they are), and its index row updated in one transaction per tree. A tree with a document that
cannot be read is left as it is and named: its subtree costs need every member.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import orjson
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from archiver.archive import serialise
from archiver.claude.prices import use_price_file
from archiver.cut import cut
from archiver.files import content_hash, document_name
from archiver.pricing import reprice_documents
from archiver.record import record_from_doc
from archiver.redact import Redactor
from archiver.store import FolderStore
from telemetry.archive_store import archive_store
from telemetry.services.index.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

__all__ = ["RepriceReport", "reprice_archives"]


class RepriceDoc(TypedDict):
    trees: int
    sessions: int
    repriced: int
    unpriced_models: list[str]
    failed: list[dict[str, str]]


@dataclass
class RepriceReport:
    trees: int = 0
    sessions: int = 0
    repriced: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    failed: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> RepriceDoc:
        return {
            "trees": self.trees,
            "sessions": self.sessions,
            "repriced": self.repriced,
            "unpriced_models": sorted(self.unpriced_models),
            "failed": self.failed,
        }


def _trees(engine: Engine) -> dict[str, list[tuple[str, str]]]:
    q = select(SessionIndex.root_session_id, SessionIndex.session_id, SessionIndex.archive_path).where(
        col(SessionIndex.source) == "opencode"
    )
    out: dict[str, list[tuple[str, str]]] = {}
    with session_scope(engine, write=False) as db:
        for root, sid, path in db.exec(q):
            out.setdefault(root, []).append((sid, path))
    return out


def reprice_archives(
    engine: Engine, settings: Settings, redactor: Redactor, progress: Callable[[int], None] = lambda _n: None
) -> RepriceReport:
    """Price every stored OpenCode tree at the prices in use now; never stops at a bad tree."""
    use_price_file(settings.price_file)
    store = archive_store(settings, engine)
    trees = _trees(engine)
    report = RepriceReport(trees=len(trees))
    for members in trees.values():
        report.sessions += len(members)
        try:
            docs = {path: orjson.loads(store.read(path)) for _, path in members}
        except (OSError, ValueError) as exc:
            report.failed.append(
                {"session_id": members[0][0], "error": cut(f"{type(exc).__name__}: {exc}", 300)}
            )
            progress(len(members))
            continue
        paths = {id(doc): path for path, doc in docs.items()}
        try:
            _write(
                engine, store, redactor, [(paths[id(d)], d) for d in reprice_documents(docs.values())], report
            )
        except Exception as exc:  # the store refused a document: this tree stays as it was
            report.failed.append(
                {"session_id": members[0][0], "error": cut(f"{type(exc).__name__}: {exc}", 300)}
            )
        for doc in docs.values():
            report.unpriced_models.update((doc.get("cost_check") or {}).get("unpriced_models") or [])
        progress(len(members))
    return report


def _write(
    engine: Engine, store: Any, redactor: Redactor, changed: list[tuple[str, Any]], report: RepriceReport
) -> None:
    if not changed:
        return
    records = []
    for path, doc in changed:
        data, _ = serialise(doc, redactor)
        _, sid = document_name(doc, redactor)
        store.put(path, sid, data, compress=path.endswith(".gz"))
        records.append(record_from_doc(orjson.loads(data), path, content_hash(data)))
    names = [path for path, _ in changed]
    if isinstance(store, FolderStore):
        store.sync()  # the renames are durable before the rows that name them are committed
    with session_scope(engine) as db:
        store.flush(db, names)
        index_records(db, records, redactor=redactor)
    problems = store.confirm(names)
    if problems:
        raise ValueError("; ".join(problems))
    report.repriced += len(changed)
