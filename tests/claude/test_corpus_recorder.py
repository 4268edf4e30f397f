"""The Claude part of the corpus can be recorded again: three scenarios of long answers and
denied tools run once more through the real Claude Code CLI and the fake API, read back by
`octel detect`, judged as their labels say. A CLI that resumed cut answers differently, or
denied tools another way, would show here first."""

from __future__ import annotations

import sys
from pathlib import Path

from claude_cli import claude_bin

sys.path.insert(0, str(Path(__file__).parents[1] / "corpus"))

import record_claude

from cli.detect_eval import load_corpus
from detectors.evaluation import evaluate

SAMPLE = ["cc_cutoff_00", "cc_denied_01", "cc_ok_resumed_00"]


def test_recording_a_few_claude_scenarios_again(tmp_path: Path) -> None:
    claude_bin()  # a skip (a failure under CI) naming how to install the CLI
    runs = record_claude.record(tmp_path, SAMPLE, workers=3)
    assert sorted(r["name"] for r in runs) == sorted(SAMPLE)
    labels = sorted(p.name for p in tmp_path.glob("*/*.label.json"))
    assert labels == sorted(f"{n}.label.json" for n in SAMPLE)
    ev = evaluate([r for folder in tmp_path.iterdir() for r in load_corpus(folder)])
    assert ev.stuck_runs == 2 and ev.stuck_detected == 2 and ev.right_named == 2
    assert ev.healthy_runs == 1 and ev.false_alarms == () and ev.passing_alarms == ()
