"""An add-on detector is one class plus its registration: score, `octel detect`, `octel why`,
thresholds and `/metrics` all see it, with nothing else edited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from octelrun import Octel

import detectors
from archiver.convert import from_fixture
from archiver.document import build_documents
from archiver.files import write_atomic
from archiver.walk import SessionSnapshot, TreeSnapshot
from detectors import REGISTRY, Detector, Finding, Thresholds
from detectors.digest import Turn
from detectors.thresholds import Threshold
from telemetry.settings import Settings
from web.app import create_app

FIXTURE = Path(__file__).parent.parent / "fixtures" / "opencode" / "healthy.json"


class TurnCounter(Detector):
    """Stuck once a session has `addon_turns_stuck` assistant turns: easy to trip on purpose."""

    name = "turn_counter"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.turns = 0

    def feed(self, turn: Turn) -> None:
        self.turns += turn.role == "assistant"

    def finding(self) -> Finding:
        stuck = self.turns >= self.th.get("addon_turns_stuck")
        return Finding(
            self.name, "stuck" if stuck else "healthy", 1.0 if stuck else 0.0, {"turns": self.turns}
        )


@pytest.fixture
def addon() -> Iterator[None]:
    REGISTRY.register(
        "turn_counter",
        "too many assistant turns (a test add-on)",
        stop_reason="too_many_turns",
        thresholds={"addon_turns_stuck": Threshold(1, "assistant turns before stuck")},
    )(TurnCounter)
    yield
    REGISTRY.unregister("turn_counter")


def _messages() -> tuple[str, list[dict[str, object]]]:
    doc = json.loads(FIXTURE.read_text())
    sid = doc["root_id"]
    return sid, [m for m in doc["messages"][sid] if isinstance(m, dict)]


def test_registry_carries_the_stop_reason_and_thresholds(addon: None) -> None:
    spec = REGISTRY.spec("turn_counter")
    assert spec is not None and spec.stop_reason == "too_many_turns"
    assert spec.thresholds == ("addon_turns_stuck",)
    assert Thresholds.from_mapping({"addon_turns_stuck": "7"}).get("addon_turns_stuck") == 7
    assert "addon_turns_stuck" in Thresholds.help() and Thresholds().to_dict()["addon_turns_stuck"] == 1
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds.from_mapping({"addon_turns_stuk": 7})


def test_unregistering_forgets_the_thresholds(addon: None) -> None:
    REGISTRY.unregister("turn_counter")
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds.from_mapping({"addon_turns_stuck": 7})
    REGISTRY.register("turn_counter", "again", thresholds={"addon_turns_stuck": Threshold(1, "x")})(
        TurnCounter
    )


def test_score_detect_why_and_metrics_see_the_addon(addon: None, octel: Octel, tmp_path: Path) -> None:
    sid, messages = _messages()
    conv = from_fixture(json.loads(FIXTURE.read_text()), sid)
    assert "turn_counter" in [f.detector for f in detectors.score(conv.messages)]

    found = octel.json("detect", str(FIXTURE))
    assert found["verdict"] == "stuck"
    assert [f["detector"] for f in found["findings"]] == ["turn_counter"]
    raised = octel.json("detect", str(FIXTURE), "-t", "addon_turns_stuck=1000")
    assert raised["verdict"] == "healthy"

    # Archived as the archiver leaves it: findings from the registered detectors.
    folder = tmp_path / "incoming"
    folder.mkdir()
    session = next(s for s in json.loads(FIXTURE.read_text())["sessions"] if s.get("id") == sid)
    snap = TreeSnapshot(
        sid, None, None, [SessionSnapshot(sid, None, 0, session=session, messages=messages)], []
    )
    (archive,) = build_documents(snap, archived_at="2026-11-30T12:00:00.000Z")
    assert [f["detector"] for f in archive["findings"]] == ["turn_counter"]
    archive["redaction"] = {}
    write_atomic(folder / f"{sid}.json", orjson.dumps(archive))
    r = octel("import", "archives", str(folder))
    assert r.exit_code == 0, r.output + r.stderr

    why = octel.json("why", sid)
    assert why["code"] == "too_many_turns" and why["verdict"] == "too many turns"
    assert "detector turn_counter: stuck" in why["evidence"][0]["detail"]

    settings = Settings(data_dir=octel.data_dir, database_url=octel.url)
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    assert 'octel_findings_total{detector="turn_counter",verdict="stuck"} 1.0' in text
