"""`octel search` finds what an imported archive's agent said and ran, as a table and as the
API's JSON; `octel db reindex` builds the index for a store that predates it, and a second run
has nothing left to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from octelrun import Octel
from sqlalchemy import delete
from sqlmodel import Session

from telemetry.store.search_models import SearchPart

V1 = Path(__file__).parent.parent / "archiver" / "fixtures" / "v1_session.json"


def _imported(octel: Octel, tmp_path: Path) -> str:
    folder = tmp_path / "old-archives"
    folder.mkdir()
    doc = json.loads(V1.read_text())
    # text that looks like console markup and like a secret: shown as typed, stored redacted
    doc["messages"][0]["parts"][0]["text"] += (
        " [bold]not markup[/bold] ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234"
    )
    (folder / V1.name).write_text(json.dumps(doc))
    r = octel("import", "archives", str(folder))
    assert r.exit_code == 0, r.output + r.stderr
    return str(doc["session_id"])


def test_search_prints_hits_and_their_json(octel: Octel, tmp_path: Path) -> None:
    sid = _imported(octel, tmp_path)
    page = octel.json("search", "tool:bash ls")
    assert [(h["session_id"], h["tool"], h["kind"]) for h in page["hits"]] == [(sid, "bash", "tool")]
    said = octel.json("search", '"write NOTES.md"')["hits"]
    assert [h["turn"] for h in said] == [0]
    assert octel.json("search", "ghp_FAKEfake")["hits"] == []
    assert octel.json("search", "NOTES*", "--since", "30000d")["hits"]
    table = octel("search", "[bold]not")
    assert table.exit_code == 0 and "[bold]not markup[/bold]" in table.stdout
    assert octel.json("search", sid)["jump"] == {"session_id": sid, "matched": "session"}
    bad = octel("search", "x", "--cursor", "nope")
    assert bad.exit_code == 2 and "--cursor" in bad.stderr


def test_reindex_builds_the_index_of_an_older_store_and_resumes(octel: Octel, tmp_path: Path) -> None:
    _imported(octel, tmp_path)
    whole = octel.json("search", "README")["hits"]
    assert whole
    with Session(octel.engine) as db:  # a store from before the content index
        db.exec(delete(SearchPart))  # type: ignore[call-overload]
        db.commit()
    assert octel.json("search", "README")["hits"] == []
    first = octel.json("db", "reindex")
    assert first["sessions"] == 1 and first["parts"] > 0 and first["errors"] == []
    assert octel.json("search", "README")["hits"] == whole
    assert octel.json("db", "reindex") == {"sessions": 0, "parts": 0, "errors": []}


CLAUDE = Path(__file__).parent.parent / "fixtures" / "claude" / "b_bash_tool" / "json" / "projects"


def test_an_imported_claude_session_is_searchable_by_its_tool(octel: Octel, tmp_path: Path) -> None:
    cfg = tmp_path / "claude"
    shutil.copytree(CLAUDE, cfg / "projects")
    r = octel("import", "claude", str(cfg))
    assert r.exit_code == 0, r.output + r.stderr
    hits = octel.json("search", "source:claude_code tool:Bash")["hits"]
    assert hits and {h["source"] for h in hits} == {"claude_code"}
    assert octel.json("search", "source:opencode tool:Bash")["hits"] == []
