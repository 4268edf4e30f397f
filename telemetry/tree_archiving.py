"""Archive one session tree from an OpenCode server and index it, never raising
(``archive_session_tree``; dispatchers import it from ``telemetry.archiving``).

Deleting after archiving happens only when every session of the tree was fetched in full,
written, read back and found valid, and indexed; otherwise the tree stays on the server and
``outcome.delete_error`` says why. The order survives a crash at any moment: new files are
written, the index commits, and only then are the older files of the same sessions removed.
With the database store (``OCTEL_ARCHIVE_STORE=database``) the documents commit in the index's
own transaction and are read back after it, before the tree may be deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import httpx
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import select

from archiver.archive import ArchiveResult, archive_tree, delete_tree, remove_superseded
from archiver.claude.prices import use_price_file
from archiver.client import OpenCodeClient
from archiver.credentials import password_for
from archiver.errors import WalkErrorDoc
from archiver.walk import TreeSnapshot
from telemetry.archive_store import archive_store
from telemetry.services.index.indexing import IndexStats, index_records
from telemetry.services.index.search_catchup import index_now
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

__all__ = ["ArchiveOutcome", "ArchiveOutcomeDoc", "archive_session_tree", "archive_session_tree_async"]


class IndexedDoc(TypedDict):
    new: int
    updated: int
    findings_new: int


class ArchiveOutcomeDoc(TypedDict):
    """An ``ArchiveOutcome`` as ``octel archive --json`` prints it: the result's keys
    (``ArchiveResultDoc``) only when the tree was walked."""

    root_session_id: str
    ok: bool
    archived_at: NotRequired[str]
    complete: NotRequired[bool]
    sessions: NotRequired[int]
    messages: NotRequired[int]
    files: NotRequired[list[str]]
    kept: NotRequired[list[str]]
    walk_errors: NotRequired[list[WalkErrorDoc]]
    write_errors: NotRequired[list[str]]
    redaction: NotRequired[dict[str, int]]
    deleted: NotRequired[bool]
    delete_error: NotRequired[str | None]
    requests: NotRequired[int]
    indexed: IndexedDoc
    errors: list[str]


@dataclass
class ArchiveOutcome:
    root_session_id: str
    result: ArchiveResult | None = None
    indexed: IndexStats = field(default_factory=IndexStats)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.complete and not self.errors

    @property
    def files(self) -> list[Path]:
        return self.result.files if self.result else []

    def to_dict(self) -> ArchiveOutcomeDoc:
        i = self.indexed
        indexed: IndexedDoc = {"new": i.new, "updated": i.updated, "findings_new": i.findings_new}
        if self.result is None:
            return {
                "root_session_id": self.root_session_id,
                "ok": self.ok,
                "indexed": indexed,
                "errors": self.errors,
            }
        return {
            "root_session_id": self.root_session_id,
            "ok": self.ok,
            **self.result.to_dict(),
            "indexed": indexed,
            "errors": self.errors,
        }


def opencode_password(settings: Settings, url: str) -> str | None:
    """The Basic auth password of ``url``: its own (``OCTEL_OPENCODE_PASSWORDS``), the one the
    OpenCode 2 service registered for it (``service.json``), else ``OCTEL_OPENCODE_PASSWORD``."""
    one, many = settings.opencode_password, settings.opencode_passwords
    return password_for(
        url,
        passwords=many.get_secret_value() if many is not None else "",
        default=one.get_secret_value() if one is not None else None,
        service_file=settings.opencode_service_file,
    )


def opencode_client(http: httpx.AsyncClient, url: str, settings: Settings) -> OpenCodeClient:
    """A client of ``url`` with its Basic auth credentials (if any)."""
    return OpenCodeClient(
        http, url, password=opencode_password(settings, url), username=settings.opencode_username
    )


def _record_failures(engine: Engine, result: ArchiveResult) -> None:
    kinds = [str(e.get("error_kind")) for e in result.walk_errors]
    kinds += ["write"] * len(result.write_errors)
    if not kinds:
        return
    with session_scope(engine) as db:
        for kind in kinds:
            bump(db, "archive_failures_total", {"error_kind": kind}, 1)


def _stored_label(engine: Engine, root_id: str) -> str | None:
    """The label a tree was archived under before: a re-archive without one keeps it (and its
    file name), rather than falling back to no label."""
    try:
        with session_scope(engine, write=False) as db:
            return db.exec(select(SessionIndex.label).where(SessionIndex.session_id == root_id)).first()
    except SQLAlchemyError:  # a new store without tables yet, or unreachable: nothing stored
        return None


def _export_later(settings: Settings, root_id: str) -> None:
    """Queue the tree for OTLP export when it is configured; never waits, never raises."""
    try:
        # imported here: the OpenTelemetry SDK costs a command that never exports (an import
        # of transcripts, say) a second of start-up
        from telemetry.otel_export.background import background_for

        bg = background_for(settings)
        if bg is not None:
            bg.submit(root_id)
    except Exception:  # export is a side road: archiving has already succeeded
        pass


async def archive_session_tree_async(
    root_id: str,
    *,
    settings: Settings,
    engine: Engine | None = None,
    server_url: str | None = None,
    label: str | None = None,
    secret_values: Sequence[str] = (),
    delete_after: bool = False,
    compress: bool = False,
    http: httpx.AsyncClient | None = None,
    status_history: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    permission_events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cycle_id: str | None = None,
    tree: TreeSnapshot | None = None,
) -> ArchiveOutcome:
    outcome = ArchiveOutcome(root_id)
    own_engine = engine is None
    try:
        use_price_file(settings.price_file)  # turns the server recorded no cost for are priced by it
        redactor = redactor_for(settings, secret_values)
        url = server_url or settings.opencode_url
        engine = engine or make_engine(settings.db_url)
        if own_engine and settings.archive_store_kind == "database":
            upgrade(engine)  # the documents go into a table of the store
        if label is None:
            label = _stored_label(engine, root_id)
        store = archive_store(settings, engine)
        client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))
        try:
            client = opencode_client(client_http, url, settings)
            result = await archive_tree(
                client,
                root_id,
                store,
                redactor,
                label=label,
                compress=compress,
                status_history=status_history,
                permission_events=permission_events,
                tree=tree,
                keep_superseded=True,
                max_bytes=settings.archive_max_bytes,
            )
            outcome.result = result
            if own_engine and settings.archive_store_kind == "files":
                upgrade(engine)
            if result.records:
                with session_scope(engine) as db:
                    store.flush(db)  # the database store: documents in the index's transaction
                    outcome.indexed = index_records(
                        db, result.records, redactor=redactor, cycle_id=cycle_id, written=result.written
                    )
                result.write_errors += store.confirm()  # read back before anything is deleted
                index_now(settings, engine, redactor)  # the search index, when not caught up later
            remove_superseded(result)  # only once the index names the new documents
            _record_failures(engine, result)
            if result.records:
                _export_later(settings, root_id)
            if delete_after:
                await delete_tree(client, result)
        finally:
            if http is None:
                await client_http.aclose()
    except Exception as exc:  # dispatchers get a result, never an exception
        outcome.errors.append(f"{type(exc).__name__}: {exc}")
        if delete_after and outcome.result is not None and outcome.result.delete_error is None:
            outcome.result.delete_error = "not deleted: the archive could not be indexed"
    finally:
        if own_engine and engine is not None:
            engine.dispose()
    return outcome


def archive_session_tree(root_id: str, *, settings: Settings, **kw: Any) -> ArchiveOutcome:
    """Synchronous form of ``archive_session_tree_async`` (for code without an event loop)."""
    try:
        return asyncio.run(archive_session_tree_async(root_id, settings=settings, **kw))
    except Exception as exc:
        return ArchiveOutcome(root_id, errors=[f"{type(exc).__name__}: {exc}"])
