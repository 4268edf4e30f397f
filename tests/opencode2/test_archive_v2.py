"""`octel archive` against an OpenCode 2 server (the project's fake, from the contract), end to end:
the probe picks the generation, the tree comes by ``?parentID=``, documents keep V2's shapes
(schema v4), the detectors read them, costs roll up without double counting, and a wrong
password is an error that names authentication."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_server import ASSUMED_INFO_BARE, FakeOpenCode2
from scenarios import doom_loop, subagent_tree
from sqlmodel import select
from typer.testing import CliRunner

from archiver.files import find_archives, read_archive
from archiver.validate import check_archive
from cli import app
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex


def _octel(tmp_path: Path, password: str, *args: str) -> Any:
    env = {"COLUMNS": "200", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": "", "OCTEL_OPENCODE_PASSWORD": password}
    return CliRunner(env=env).invoke(app, ["--data-dir", str(tmp_path / "data"), *args])


def _docs(tmp_path: Path) -> dict[str, dict[str, Any]]:
    docs = [read_archive(p) for p in find_archives(tmp_path / "data" / "archives")]
    return {d["session_id"]: d for d in docs}


def _rows(tmp_path: Path) -> list[SessionIndex]:
    eng = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    try:
        with session_scope(eng, write=False) as db:
            return list(db.exec(select(SessionIndex).order_by(SessionIndex.depth)))
    finally:
        eng.dispose()


def test_a_subagent_tree_is_archived_in_v2_shapes(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    # assumption named (the contract is not sure): /api/info answers bare, not in {data}
    assert ASSUMED_INFO_BARE
    ids = subagent_tree(oc2)
    res = _octel(tmp_path, oc2.password, "archive", ids["root"], "--server", oc2.url, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["complete"] and out["sessions"] == 3 and out["indexed"]["new"] == 3
    docs = _docs(tmp_path)
    root, child, grand = (docs[ids[k]] for k in ("root", "child", "grandchild"))
    for d in docs.values():
        check_archive(d)
        assert d["schema_version"] == 4 and d["source"]["opencode_generation"] == 2
        assert d["source"]["opencode_version"] == oc2.version and d["source"]["messages_route"] == "v2"
        assert d["execution"]["outcome"] == "succeeded"
    assert (child["parent_session_id"], child["depth"]) == (ids["root"], 1)
    assert (grand["parent_session_id"], grand["depth"]) == (ids["child"], 2)
    # V2's own shapes are kept: typed messages with content[], the stored shell, the idle marker
    kinds = [m["type"] for m in root["messages"]]
    assert kinds == ["user", "assistant", "assistant", "shell", "assistant", "idle"]
    assert root["messages"][2]["content"][0]["name"] == "subagent"
    assert root["session"]["location"] == {"directory": "/work/project"}
    # per-step tokens and cost; a session's own cost excludes its children (V2's record agrees)
    assert [t["cost"] for t in root["per_turn"]] == [0.0, 0.001, 0.001]
    assert root["per_turn"][0]["tokens"]["cache_read"] == 50
    assert root["totals"]["cost"] == pytest.approx(oc2.sessions[ids["root"]]["cost"])
    assert root["subtree"]["cost"] == pytest.approx(0.006) and root["subtree"]["sessions"] == 3
    assert child["totals"]["turns"] == 2 and child["totals"]["tool_calls"] == 2
    rows = {r.session_id: r for r in _rows(tmp_path)}
    assert set(rows) == set(ids.values()) and rows[ids["grandchild"]].parent_session_id == ids["child"]


def test_delete_after_removes_the_tree_once_archived(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    ids = subagent_tree(oc2)
    res = _octel(
        tmp_path, oc2.password, "archive", ids["root"], "--server", oc2.url, "--delete-after", "--json"
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["deleted"] is True
    assert oc2.sessions == {}, "V2's delete removes every descendant"
    assert ("DELETE", f"/api/session/{ids['root']}") in oc2.requests
    assert len(_docs(tmp_path)) == 3


def test_the_detectors_see_a_doom_loop_in_a_v2_session(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    sid = doom_loop(oc2)
    res = _octel(tmp_path, oc2.password, "archive", sid, "--server", oc2.url, "--json")
    assert res.exit_code == 0, res.output
    doc = _docs(tmp_path)[sid]
    stuck = {f["detector"] for f in doc["findings"] if f["verdict"] == "stuck"}
    assert "doom_loop" in stuck and doc["verdict"] == "stuck"


def test_a_wrong_password_is_an_error_naming_auth(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    ids = subagent_tree(oc2)
    res = _octel(tmp_path, "not-the-password", "archive", ids["root"], "--server", oc2.url)
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "authentication failed (HTTP 401)" in text and "OCTEL_OPENCODE_PASSWORD" in text
    assert "not-the-password" not in res.output, "the password is never printed"
    folder = tmp_path / "data" / "archives"
    assert not folder.exists() or not find_archives(folder), "nothing archived"


def test_v4_archives_are_shown_and_imported(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    from telemetry.archive_store import archive_store
    from telemetry.queries.session_detail import session_detail
    from telemetry.queries.timeline import message_page
    from telemetry.settings import Settings

    ids = subagent_tree(oc2)
    assert _octel(tmp_path, oc2.password, "archive", ids["root"], "--server", oc2.url).exit_code == 0
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]
    eng = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    try:
        with session_scope(eng, write=False) as db:
            detail = session_detail(db, ids["child"], archive_store(settings, eng))
            assert detail is not None and detail.archive.available and len(detail.per_turn) == 2
    finally:
        eng.dispose()
    page = message_page(ids["root"], _docs(tmp_path)[ids["root"]], 0, 50)
    steps = [v for v in page.items if v.role == "assistant"]
    assert len(steps) == 3 and steps[1].cost_usd == 0.001 and steps[1].tokens is not None
    assert steps[1].tokens.cache_read == 50 and steps[1].parts[0]["tool"] == "task"
    assert [v.role for v in page.items] == ["user", "assistant", "assistant", "shell", "assistant", "idle"]
    other = tmp_path / "other"
    res = CliRunner(env={"OCTEL_REDACT_VALUES": ""}).invoke(
        app,
        [
            "--data-dir",
            str(other / "data"),
            "import",
            "archives",
            str(tmp_path / "data" / "archives"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["new"] == 3


def test_sessions_list_and_metrics_name_the_generation(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from telemetry.settings import Settings
    from web.app import create_app

    ids = subagent_tree(oc2)
    assert _octel(tmp_path, oc2.password, "archive", ids["root"], "--server", oc2.url).exit_code == 0
    listed = _octel(tmp_path, oc2.password, "sessions", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)["items"]
    assert {r["opencode_generation"] for r in rows} == {2}
    table = _octel(tmp_path, oc2.password, "sessions", "list")
    assert "opencode 2" in table.stdout
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    assert 'octel_opencode_sessions_archived_total{generation="2"} 3.0' in text
