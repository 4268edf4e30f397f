"""A session archived by the archiver (imported from a v1 file) seen through show, tree and why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from octelrun import Octel

V1 = Path(__file__).parent.parent / "archiver" / "fixtures" / "v1_session.json"


def test_imported_archive_has_turns_tree_and_a_verdict(octel: Octel, tmp_path: Path) -> None:
    folder = tmp_path / "old-archives"
    folder.mkdir()
    shutil.copy(V1, folder / V1.name)
    r = octel("import", "archives", str(folder))
    assert r.exit_code == 0, r.output + r.stderr
    sid = octel.json("sessions", "list")["items"][0]["session_id"]
    shown = octel.json("sessions", "show", sid)
    assert shown["archive"]["available"] and shown["archive"]["error"] is None
    assert len(shown["per_turn"]) == shown["session"]["turn_count"] > 0
    assert shown["per_turn"][-1]["finish"] == "stop"
    assert sum(t["cost_usd"] for t in shown["per_turn"]) == pytest.approx(shown["session"]["cost_usd"])
    table = octel("sessions", "show", sid)
    assert "turns" in table.stdout and "tool-calls" in table.stdout
    assert octel.json("sessions", "tree", sid)["subtree_session_count"] == 1
    why = octel.json("why", sid)
    assert why["code"] == "completed" and why["evidence"][0]["source"] == "archive"
