"""The export reads many trees in batches (`iter_trees`) exactly as it would read each alone
(`load_tree`): the same documents, the same cycle, the same problems, in the order asked."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from otel_store import archive
from sqlmodel import Session

from archiver.redact import Redactor
from telemetry.archive_store import archive_store
from telemetry.otel_export.sources import iter_trees, load_tree
from telemetry.services.ingest import ingest
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.timeutil import utcnow


def _cycle(cfg: Settings, cycle_id: str, session_id: str | None, started: str) -> None:
    engine = make_engine(cfg.db_url)
    upgrade(engine)
    with session_scope(engine) as db:
        ingest.finish_cycle(
            db,
            ingest.CycleFinish(
                cycle_id=cycle_id,
                driver="implement",
                terminal_state="done",
                session_id=session_id,
                processed_count=1,
                started_at=started,
                ended_at="2026-11-30T12:00:00Z",
            ),  # type: ignore[arg-type]
            utcnow(),
            redactor=Redactor(b"k" * 32),
        )
    engine.dispose()


@pytest.mark.parametrize("store", ["files", "database"])
def test_trees_read_in_batches_are_the_trees_read_one_by_one(
    tmp_path: Path, store: Literal["files", "database"]
) -> None:
    cfg = Settings(data_dir=tmp_path / "data", archive_store=store, _env_file=None)  # type: ignore[call-arg]
    named = archive(cfg, "subagent_tree", cycle_id="cyc-named")  # its index row names the cycle
    _cycle(cfg, "cyc-named", None, "2026-11-30T09:00:00Z")
    newest = archive(cfg, "doom_loop")  # no row names a cycle: the newest naming the session wins
    _cycle(cfg, "cyc-old", newest, "2026-11-30T08:00:00Z")
    _cycle(cfg, "cyc-new", newest, "2026-11-30T10:00:00Z")
    plain = archive(cfg, "healthy")
    gone = archive(cfg, "tool_errors", cycle_id="cyc-missing")  # names a cycle the store lacks
    _cycle(cfg, "cyc-fallback", gone, "2026-11-30T07:00:00Z")
    if store == "files":  # a tree whose archive files are gone is read with its problems
        for p in cfg.archives.glob(f"*{gone}*"):
            p.unlink()
    roots = [plain, named, "ses_unknown", newest, gone, named]
    engine = make_engine(cfg.db_url)
    try:
        with Session(engine) as db:
            src = archive_store(cfg, engine)
            one_by_one = [load_tree(db, src, r) for r in roots]
            for batch in (1, 2, 100):
                got = list(iter_trees(db, src, roots, batch=batch))
                assert [t.root_session_id for t in got] == roots
                for a, b in zip(got, one_by_one, strict=True):
                    key = lambda d: d["session_id"]  # noqa: E731
                    assert sorted(a.docs, key=key) == sorted(b.docs, key=key)
                    assert (a.cycle, a.problems) == (b.cycle, b.problems)
    finally:
        engine.dispose()
    cycles = {t.root_session_id: t.cycle.cycle_id if t.cycle else None for t in one_by_one}
    want = {plain: None, named: "cyc-named", "ses_unknown": None, newest: "cyc-new", gone: "cyc-fallback"}
    assert cycles == want
    assert all(t.docs for t in one_by_one if t.root_session_id not in ("ses_unknown", gone))
    assert bool(one_by_one[4].problems) == (store == "files")
