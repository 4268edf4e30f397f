"""Retention: remove archives and rows older than a cutoff, keeping failures and stuck sessions.

Sessions go a whole tree at a time (a tree goes when its newest session is older than the
cutoff and nothing in it is kept), so a tree view is never left with holes. With the keep rule
(the default) a tree stays when one of its sessions is stuck, ended in an error or belongs to a
failed cycle; failed cycles and Claude runs that ended in an error stay too. Cycles still in
flight always stay.

The `aggregate` table is never touched: the counters `/metrics` exposes only go up. Archive
documents (files, or rows of the database store) are deleted before their index rows, so a crash
in between leaves index rows whose document is gone (shown as pruned, and removed by the next
run) rather than documents nothing points at. Files outside the archive folder are left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from sqlalchemy import case, delete, func, or_
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from archiver.store import ArchiveStore, FolderStore, as_store, locate
from telemetry.services.spend.spend_links import cycles_changed, remove_sessions
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Cycle, Finding, OtlpSeen, SessionIndex
from telemetry.vocabulary import LIKE_PATTERNS

__all__ = ["PrunePlan", "PruneReport", "plan_prune", "prune"]

_BATCH = 500
_FAILED_STATES = LIKE_PATTERNS  # telemetry/vocabulary.py: the one list of failure words

Progress = Callable[[str, int], None]


@dataclass
class PrunePlan:
    cutoff: datetime
    keep_failures: bool
    roots: list[str] = field(default_factory=list)
    sessions: list[tuple[str, str]] = field(default_factory=list)  # (session_id, archive_path)
    cycles: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    kept: dict[str, int] = field(default_factory=dict)


class PruneReport(TypedDict):
    """What `prune` removed, or would (`dry_run`): `octel prune --json` prints it as it is."""

    cutoff: str
    dry_run: bool
    keep_failures: bool
    trees: int
    sessions: int
    findings: int
    archive_files: int
    archive_bytes: int
    archive_files_missing: int
    archive_files_outside: int
    cycles: int
    agent_runs: int
    kept: dict[str, int]
    errors: list[str]
    sample_sessions: NotRequired[list[str]]  # a dry run's first 20


def _session_kept() -> ColumnElement[bool]:
    """Stuck, ended in an error, or the session of a failed cycle (a post-mortem needs it)."""
    failed = select(col(Cycle.session_id)).where(col(Cycle.session_id).is_not(None), _cycle_failed())
    failed_ids = select(col(Cycle.cycle_id)).where(_cycle_failed())
    return or_(
        col(SessionIndex.verdict) == "stuck",
        col(SessionIndex.error_kind).is_not(None),
        col(SessionIndex.session_id).in_(failed),
        col(SessionIndex.cycle_id).in_(failed_ids),
    )


def _cycle_failed() -> ColumnElement[bool]:
    state = func.lower(func.coalesce(col(Cycle.terminal_state), ""))
    outcome = func.lower(func.coalesce(col(Cycle.worker_outcome), ""))
    return or_(
        col(Cycle.error_kind).is_not(None),
        *(state.like(p) for p in _FAILED_STATES),
        *(outcome.like(p) for p in _FAILED_STATES),
    )


def plan_prune(db: Session, cutoff: datetime, keep_failures: bool = True) -> PrunePlan:
    """What a prune at `cutoff` removes; read-only (a dry run prints this)."""
    plan = PrunePlan(cutoff, keep_failures)
    kept_flag = func.max(case((_session_kept(), 1), else_=0)) if keep_failures else func.max(0)
    trees = (
        select(
            col(SessionIndex.root_session_id),
            func.max(col(SessionIndex.archived_at)).label("newest"),
            kept_flag.label("kept"),
            func.count().label("n"),
        )
        .group_by(col(SessionIndex.root_session_id))
        .having(func.max(col(SessionIndex.archived_at)) < cutoff)
    )
    kept_sessions = 0
    for root, _newest, kept, n in db.exec(trees).all():
        if kept:
            kept_sessions += int(n)
        else:
            plan.roots.append(root)
    for chunk in _chunks(plan.roots):
        stmt = select(SessionIndex.session_id, SessionIndex.archive_path).where(
            col(SessionIndex.root_session_id).in_(chunk)
        )
        plan.sessions.extend((sid, path) for sid, path in db.exec(stmt).all())
    old_cycles = [col(Cycle.ended_at).is_not(None), col(Cycle.ended_at) < cutoff]
    old_runs = [col(AgentRun.created_at) < cutoff]
    if keep_failures:
        plan.kept["cycles"] = db.exec(select(func.count()).where(*old_cycles, _cycle_failed())).one()
        plan.kept["agent_runs"] = db.exec(select(func.count()).where(*old_runs, col(AgentRun.is_error))).one()
        old_cycles.append(~_cycle_failed())
        old_runs.append(~col(AgentRun.is_error))
    plan.kept["sessions"] = kept_sessions
    plan.cycles = [i for i in db.exec(select(Cycle.id).where(*old_cycles)).all() if i is not None]
    plan.runs = [i for i in db.exec(select(AgentRun.id).where(*old_runs)).all() if i is not None]
    plan.kept.setdefault("cycles", 0)
    plan.kept.setdefault("agent_runs", 0)
    return plan


def _chunks(items: list[Any], size: int = _BATCH) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _files(plan: PrunePlan, store: ArchiveStore) -> tuple[list[str], int, int, int]:
    """Documents to delete, their bytes, how many are already gone, how many lie outside the
    archive folder."""
    out, size, missing, outside = [], 0, 0, 0
    for _sid, rel in plan.sessions:
        if isinstance(store, FolderStore) and locate(store.folder, rel) is None:
            outside += 1
        elif (st := store.stat(rel)) is None:
            missing += 1
        else:
            out.append(rel)
            size += st.size
    return out, size, missing, outside


def _cycle_links(db: Session, ids: list[int]) -> list[tuple[str, str | None]]:
    return [
        (c, s) for c, s in db.exec(select(Cycle.cycle_id, Cycle.session_id).where(col(Cycle.id).in_(ids)))
    ]


def _delete_rows(db: Session, model: Any, column: Any, values: Iterable[Any]) -> int:
    values = list(values)
    if not values:
        return 0
    db.exec(delete(model).where(column.in_(values)))
    return len(values)


def prune(
    engine: Engine,
    archives: ArchiveStore | Path,
    cutoff: datetime,
    *,
    keep_failures: bool = True,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> PruneReport:
    """Remove what `plan_prune` lists (unless `dry_run`) and report it; counters stay as they are."""
    store = as_store(archives)
    with session_scope(engine, write=False) as db:
        plan = plan_prune(db, cutoff, keep_failures)
        findings = 0
        for chunk in _chunks([s for s, _ in plan.sessions]):
            stmt = select(func.count()).where(col(Finding.session_id).in_(chunk))
            findings += db.exec(stmt).one()
    files, size, missing, outside = _files(plan, store)
    report: PruneReport = {
        "cutoff": cutoff.isoformat(),
        "dry_run": dry_run,
        "keep_failures": keep_failures,
        "trees": len(plan.roots),
        "sessions": len(plan.sessions),
        "findings": findings,
        "archive_files": len(files),
        "archive_bytes": size,
        "archive_files_missing": missing,
        "archive_files_outside": outside,
        "cycles": len(plan.cycles),
        "agent_runs": len(plan.runs),
        "kept": plan.kept,
        "errors": [],
    }
    if dry_run:
        report["sample_sessions"] = [s for s, _ in plan.sessions[:20]]
        return report
    wanted = set(files)
    for chunk in _chunks(plan.sessions):
        report["errors"] += store.remove([rel for _sid, rel in chunk if rel in wanted])
        ids = [s for s, _ in chunk]
        with session_scope(engine) as db:
            _delete_rows(db, Finding, col(Finding.session_id), ids)
            remove_sessions(db, ids)
        if progress is not None:
            progress("sessions", len(chunk))
    for name, model, column, ids in (
        ("cycles", Cycle, col(Cycle.id), plan.cycles),
        ("agent_runs", AgentRun, col(AgentRun.id), plan.runs),
    ):
        for chunk in _chunks(ids):
            with session_scope(engine) as db:
                links = _cycle_links(db, chunk) if model is Cycle else []
                if model is AgentRun:  # a run's telemetry keys go with it
                    keys = select(AgentRun.run_key).where(col(AgentRun.id).in_(chunk))
                    db.exec(delete(OtlpSeen).where(col(OtlpSeen.run_key).in_(keys)))
                _delete_rows(db, model, column, chunk)
                cycles_changed(db, links)  # sessions they named take their next driver
            if progress is not None:
                progress(name, len(chunk))
    return report
