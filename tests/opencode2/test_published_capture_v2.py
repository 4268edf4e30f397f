"""A published capture of OpenCode 2.0.15's `/api/event` and the message page the same server
stored for that session (fixtures/SOURCES.md): the capture, read as `octel watch` reads the
stream (the decoder, then the mirror), gives back the server's own messages field for field
(fields octel does not use, such as the reasoning's provider `state`, `rawFinish` and
`time.streamed`, kept), on the live board and through `octel import archives` too."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner
from watch_v2 import new_store

from archiver.files import read_archive
from cli import app
from tower.capture_v2 import capture_trees
from tower.events_v2 import V2Decoder
from tower.live_board import LiveBoard

FIXTURES = Path(__file__).parent / "fixtures"
FRAMES = json.loads((FIXTURES / "events-basic-2.0.15.json").read_text())
PAGE = json.loads((FIXTURES / "messages-basic-2.0.15.json").read_text())
SID = "ses_f1991fb25ffeHR2OxfoQ01Yy78"
# the stream tells every stored message of the session (the idle marker under the id of the
# execution's end), oldest first
TOLD = list(reversed(PAGE["data"]))


def test_the_capture_gives_back_what_the_server_stored() -> None:
    (tree,) = capture_trees(FRAMES)
    (s,) = tree.sessions
    assert tree.root_id == SID and tree.generation == 2 and not tree.walk_errors
    assert s.messages == TOLD
    assert s.messages[1]["content"][0]["state"] == {"reasoningField": "reasoning_content"}
    assert s.messages[2] == {
        "id": "msg_0e66e1b28001Jg7PeRGG7XwDF1",
        "time": {"created": 1790572370728},
        "type": "idle",
        "outcome": "succeeded",
    }
    rec = s.session or {}
    assert (rec["title"], rec["version"], rec["outcome"]) == ("OK-42", "2.0.15", "succeeded")
    assert rec["location"] == {"directory": "C:\\Users\\swordkee\\AppData\\Local\\Temp\\opencode\\oc-capture"}
    assert "directory" not in rec  # V2's record, not the 1.x view of it


def test_the_capture_on_the_live_board() -> None:
    dec, board = V2Decoder(), LiveBoard("http://oc2")
    for i, frame in enumerate(FRAMES):
        for ev in dec.decode(frame):
            board.on_event(ev, 1_790_572_360.0 + i)
    (row,) = board.snapshot(1_790_572_400.0)
    assert (row.session_id, row.state, row.title) == (SID, "idle", "OK-42")
    assert row.tokens["input"] == 5203 and row.tokens["cache_read"] == 1280 and row.turns == 1
    assert dec.ignored >= 10  # catalogue pings, instructions, usage: counted, never fatal


def test_the_capture_imported_is_a_v4_archive_of_the_servers_messages(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "capture.json").write_text(json.dumps(FRAMES))
    store = new_store(tmp_path / "data", redact_values="")
    base = ["--data-dir", str(store.settings.data_dir), "--database-url", store.settings.db_url]
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    res = runner.invoke(app, [*base, "import", "archives", str(folder), "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (doc_path,) = store.settings.archives.rglob("*.json*")
    doc = read_archive(doc_path)
    assert doc["schema_version"] == 4 and doc["session_id"] == SID and doc["messages"] == TOLD
    assert doc["execution"]["outcome"] == "succeeded" and doc["title"] == "OK-42"
    assert (
        doc["per_turn"][0]["tokens"]["input"] == 5203
        and doc["model"] == "opencode-go/longcat-2.5-preview-free"
    )
