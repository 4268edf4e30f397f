"""`octel import archives DIR` on OpenCode 2 files among the archives: exports of the V2 export
route (linked into their tree by `parentID`, written as schema v4 in V2's own shapes), a V2
`opencode run --format json` log and a capture of `/api/event`; a bad file is reported and
skipped, never the end of the import."""

from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

import httpx
from fake_server import FakeOpenCode2
from scenarios import subagent_tree
from sqlmodel import select
from test_detect_v2 import _run_log
from typer.testing import CliRunner
from watch_v2 import new_store

from archiver.files import read_archive
from cli import app
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex


def _import(store: Any, folder: Path) -> tuple[int, dict[str, Any]]:
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    base = ["--data-dir", str(store.settings.data_dir), "--database-url", store.settings.db_url]
    res = runner.invoke(app, [*base, "import", "archives", str(folder), "--json"], catch_exceptions=False)
    return res.exit_code, json.loads(res.stdout)


def _rows(store: Any) -> dict[str, SessionIndex]:
    with session_scope(store.engine, write=False) as db:
        return {r.session_id: r for r in db.exec(select(SessionIndex))}


def test_v2_exports_logs_and_captures_are_imported_and_a_bad_file_skipped(
    oc2: FakeOpenCode2, tmp_path: Path
) -> None:
    frames: queue.Queue[Any] = queue.Queue()
    oc2._subs.append(frames)  # what /api/event said while the tree ran: the capture
    ids = subagent_tree(oc2)
    folder = tmp_path / "in"
    (folder / "exports").mkdir(parents=True)
    exported = {}
    for role, sid in ids.items():
        got = httpx.get(f"{oc2.url}/api/experimental/session/{sid}/export", auth=("opencode", oc2.password))
        exported[sid] = got.json()["data"]
        (folder / "exports" / f"{role}.json").write_bytes(got.content)
    capture = []
    while not frames.empty():
        capture.append(frames.get())
    (folder / "events.jsonl").write_text("".join(json.dumps(f) + "\n" for f in capture))
    (folder / "run.jsonl").write_text(_run_log("ses_0999999999000Fk", 3))
    (folder / "broken.json").write_text('{"info": {"id": "ses_x"}, "messages": [')
    (folder / "other.json").write_text('{"hello": "world"}')

    store = new_store(tmp_path / "data", redact_values="")
    code, report = _import(store, folder)
    failed = {Path(f["file"]).name: f["error"] for f in report["failed"]}
    assert code == 1 and set(failed) == {"broken.json", "other.json"}, failed
    rows = _rows(store)

    # the exports: one tree, each session v4 with the server's own record and messages
    for role, sid in ids.items():
        row = rows[sid]
        assert row.schema_version == 4 and row.root_session_id == ids["root"], role
        doc = read_archive(store.settings.archives / row.archive_path)
        assert doc["source"]["origin"] == "file" and doc["source"]["path"].endswith(f"{role}.json")
        assert doc["session"] == exported[sid]["info"] and doc["messages"] == exported[sid]["messages"]
    assert rows[ids["grandchild"]].parent_session_id == ids["child"] and rows[ids["grandchild"]].depth == 2
    root = read_archive(store.settings.archives / rows[ids["root"]].archive_path)
    assert root["execution"]["outcome"] == "succeeded" and root["subtree"]["sessions"] == 3

    # the run log: its session, scored from the lines (1.x-shaped, as the CLI prints them)
    run = rows["ses_0999999999000Fk"]
    assert run.schema_version == 3 and run.turn_count == 3

    # importing the same folder again updates, never duplicates (rows nor files)
    names = sorted(p.name for p in store.settings.archives.rglob("*.json*"))
    code, again = _import(store, folder)
    assert code == 1 and again["new"] == 0 and len(_rows(store)) == len(rows)
    assert sorted(p.name for p in store.settings.archives.rglob("*.json*")) == names


def test_a_v2_event_capture_is_archived_in_v2s_shapes(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    frames: queue.Queue[Any] = queue.Queue()
    oc2._subs.append(frames)
    ids = subagent_tree(oc2)
    told = ("user", "assistant", "idle")  # what the stream tells: not stored shells, compactions
    served = {sid: [m for m in oc2.messages[sid] if m["type"] in told] for sid in ids.values()}
    folder = tmp_path / "in"
    folder.mkdir()
    lines = []
    while not frames.empty():
        lines.append("data: " + json.dumps(frames.get()) + "\n\n")  # as SSE text, the way curl saves it
    (folder / "capture.ndjson").write_text(": heartbeat\n\n" + "".join(lines))
    store = new_store(tmp_path / "data", redact_values="")
    code, report = _import(store, folder)
    assert code == 0 and not report["failed"], report
    rows = _rows(store)
    assert set(rows) == set(ids.values())
    for sid in ids.values():
        doc = read_archive(store.settings.archives / rows[sid].archive_path)
        assert doc["schema_version"] == 4 and doc["source"]["origin"] == "file"
        assert doc["messages"] == served[sid] and doc["root_session_id"] == ids["root"]
