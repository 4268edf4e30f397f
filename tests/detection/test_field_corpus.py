"""The Claude field-forms corpus (`tests/corpus/claude_field/`): written by its generator (kept
in step), and every form caught and named, no healthy run called stuck, sidechains included."""

from __future__ import annotations

from pathlib import Path

import gen_claude_field

from cli.detect_eval import load_corpus
from detectors.evaluation import evaluate

FIELD = Path(__file__).parents[1] / "corpus" / "claude_field"


def test_the_files_are_what_the_generator_writes() -> None:
    assert gen_claude_field.main(["--check"]) == 0


def test_every_field_form_is_caught_and_no_healthy_run_called_stuck() -> None:
    ev = evaluate(load_corpus(FIELD))
    assert ev.stuck_runs == 7 and ev.healthy_runs == 4
    assert ev.stuck_detected == ev.stuck_runs and ev.right_named == ev.stuck_detected
    assert ev.false_alarms == () and ev.passing_alarms == ()
