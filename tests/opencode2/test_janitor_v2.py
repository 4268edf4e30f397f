"""`octel janitor` against OpenCode 2 (the project's fake server): the adapter is chosen by the
probe, V2's delete takes every descendant, and only the tree archived, verified and idle goes;
a running tree, an unarchived one and one changed since its archive stay, each with its reason;
a dry run deletes nothing; a wrong password and a server that is down are clear errors."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from fake_server import FakeOpenCode2
from scenarios import doom_loop, subagent_tree
from typer.testing import CliRunner

from cli import app
from telemetry.queries.actions import list_actions
from telemetry.store.db import make_engine, session_scope


def _octel(tmp_path: Path, password: str, *args: str) -> Any:
    env = {"COLUMNS": "200", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": "", "OCTEL_OPENCODE_PASSWORD": password}
    return CliRunner(env=env).invoke(app, ["--data-dir", str(tmp_path / "data"), *args])


def _archive(tmp_path: Path, oc2: FakeOpenCode2, root: str) -> None:
    res = _octel(tmp_path, oc2.password, "archive", root, "--server", oc2.url, "--json")
    assert res.exit_code == 0, res.output


def _janitor(tmp_path: Path, oc2: FakeOpenCode2, *extra: str) -> dict[str, Any]:
    res = _octel(
        tmp_path, oc2.password, "janitor", "--server", oc2.url, "--older-than", "0s", "--json", *extra
    )
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_only_the_archived_verified_idle_tree_is_deleted(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    done = subagent_tree(oc2)
    grown = subagent_tree(oc2)
    running = doom_loop(oc2)
    unarchived = doom_loop(oc2, repeats=2)
    oc2.idle(running)
    oc2.idle(unarchived)
    for root in (done["root"], grown["root"], running):
        _archive(tmp_path, oc2, root)
    oc2.step(grown["grandchild"], [{"type": "text", "text": "One more thing."}])  # after its archive
    oc2.user(running, "Go on.")  # a run in flight: the execution is active

    dry = _janitor(tmp_path, oc2, "--dry-run")
    fates = {t["root_session_id"]: (t["fate"], t["reason"]) for t in dry["trees"]}
    assert fates == {
        done["root"]: ("would_delete", None),
        grown["root"]: ("kept", "changed"),
        running: ("kept", "running"),
        unarchived: ("kept", "unarchived"),
    }
    assert set(done.values()) <= set(oc2.sessions)  # a dry run deletes nothing
    assert dry["trees_deleted"] == 1 and dry["sessions_deleted"] == 3 and dry["archive_bytes"] > 0
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    try:
        with session_scope(engine, write=False) as db:
            assert list_actions(db).items == []  # nor audits anything

        held = sum(len(oc2.messages[s]) for s in done.values())
        out = _janitor(tmp_path, oc2)
        assert not set(done.values()) & set(oc2.sessions)  # the root and every descendant
        assert {running, unarchived, *grown.values()} <= set(oc2.sessions)
        assert (out["trees_deleted"], out["sessions_deleted"]) == (1, 3)
        assert out["messages_deleted"] == held > 0
        assert out["parts_deleted"] > 0 and out["kept"] == {"changed": 1, "running": 1, "unarchived": 1}
        grown_row = next(t for t in out["trees"] if t["root_session_id"] == grown["root"])
        assert grown["grandchild"] in grown_row["detail"] and "archived" in grown_row["detail"]
        with session_scope(engine, write=False) as db:
            rows = {a.root_session_id: a for a in list_actions(db).items}
        assert (rows[done["root"]].action, rows[done["root"]].outcome) == ("delete", "done")
        assert rows[done["root"]].evidence["sessions"] == 3
        assert {rows[r].outcome for r in (running, unarchived, grown["root"])} == {"skipped"}
        assert rows[running].evidence["reason"] == "running" and rows[running].rule == "delete_archived_after"
    finally:
        engine.dispose()


def test_a_wrong_password_and_a_server_down_are_clear_errors(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    subagent_tree(oc2)
    res = _octel(tmp_path, "not-the-password", "janitor", "--server", oc2.url)
    assert (
        res.exit_code == 1
        and "authentication failed" in res.output
        and "OCTEL_OPENCODE_PASSWORD" in res.output
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    res = _octel(tmp_path, oc2.password, "janitor", "--server", f"http://127.0.0.1:{port}")
    assert res.exit_code == 1 and f"127.0.0.1:{port}" in res.output, res.output
    res = _octel(tmp_path, oc2.password, "janitor", "--server", oc2.url, "--older-than", "soon")
    assert res.exit_code == 2 and "--older-than" in res.output
