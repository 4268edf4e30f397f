"""The recorder of the real corpus still works: three of its scenarios recorded again against a
real `opencode serve`, read back by `octel detect`, judged as their labels say."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from opencode_harness import find_or_install
from realparts import require

sys.path.insert(0, str(Path(__file__).parents[1] / "corpus"))

import record_real

from cli.detect_eval import load_corpus
from detectors.evaluation import evaluate

pytestmark = pytest.mark.opencode
SAMPLE = ["silent_00", "outlimit_00", "ok_longanswer_00"]


def test_recording_a_few_scenarios_again(tmp_path: Path) -> None:
    binary, why = find_or_install()
    require(binary is not None, f"opencode-ai ({why})", "see tests/e2e/opencode_harness.py")
    runs = record_real.record(tmp_path, SAMPLE, workers=3, redo=True)
    assert sorted(r["name"] for r in runs) == sorted(SAMPLE)
    written = sorted(p.name for p in tmp_path.glob("*/*.label.json"))
    assert written == sorted(f"{n}.label.json" for n in SAMPLE)
    for label_file in tmp_path.glob("*/*.label.json"):
        doc = json.loads(label_file.with_name(label_file.name.replace(".label", "")).read_text())
        assert doc["opencode_version"] == "1.18.33" and doc["root_id"] in doc["messages"]
        assert any(e["event"]["type"] == "session.idle" for e in doc["events"])
    runs_read = [r for folder in tmp_path.iterdir() for r in load_corpus(folder)]
    ev = evaluate(runs_read)
    assert ev.stuck_runs == 2 and ev.stuck_detected == 2 and ev.right_named == 2
    assert ev.healthy_runs == 1 and ev.false_alarms == ()
