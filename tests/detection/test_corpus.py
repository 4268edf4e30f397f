"""The generated corpus (`tests/corpus/*.json`, written with the detectors as worked examples of
each rule): regenerating it gives the same files, every session is labelled, every stuck run is
flagged and nearly all reach stuck, and no healthy run is called stuck. The recorded corpus
(`tests/corpus/real/`) is measured in test_real_corpus.py."""

from __future__ import annotations

import json
from pathlib import Path

import gen_corpus
import pytest

from cli.detect import load_corpus
from detectors import REGISTRY
from detectors.evaluation import Evaluation, evaluate

CORPUS = Path(__file__).parents[1] / "corpus"
# The detectors this corpus was written for; newer ones are measured on the recorded corpus.
GENERATED_FOR = (
    "doom_loop",
    "retry_cascade",
    "permission_deadlock",
    "empty_reasoning",
    "monologue",
    "compaction_loop",
    "silent_stop",
    "no_progress",
)


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    return evaluate(load_corpus(CORPUS))


def test_regenerating_the_corpus_gives_the_same_files() -> None:
    built = dict(gen_corpus.build())
    on_disk = {p.name for p in CORPUS.glob("*.json")}
    assert set(built) == on_disk
    for name, content in built.items():
        assert (CORPUS / name).read_text() == content, f"{name} differs: run tests/corpus/gen_corpus.py"


def test_every_session_has_one_label() -> None:
    labels = {p.name.removesuffix(".label.json") for p in CORPUS.glob("*.label.json")}
    sessions = {
        p.name.removesuffix(".json") for p in CORPUS.glob("*.json") if not p.name.endswith(".label.json")
    }
    assert sessions <= labels
    for name in labels:
        label = json.loads((CORPUS / f"{name}.label.json").read_text())
        assert label["label"] in {"healthy", *REGISTRY.names()}
        assert (CORPUS / label.get("session", f"{name}.json")).is_file()


def test_the_corpus_covers_every_detector_and_the_hard_healthy_cases() -> None:
    runs = load_corpus(CORPUS)
    labels = [r.label for r in runs]
    for name in GENERATED_FOR:
        assert labels.count(name) >= 3, name
    notes = {json.loads(p.read_text()).get("note") for p in CORPUS.glob("*.label.json")}
    for hard in (
        "polling with sleep",
        "a long build",
        "many different reads",
        "test-fix-test that makes progress",
        "long reasoning before a big edit",
    ):
        assert hard in notes
    assert sum(1 for r in runs if r.name.startswith("fx_")) >= 15  # captured from a real server


def test_recall_on_stuck_runs_and_no_false_alarm(evaluation: Evaluation) -> None:
    assert evaluation.stuck_recall is not None and evaluation.stuck_recall >= 0.9
    assert all(r.label in r.fired for r in evaluation.runs if r.label != "healthy")
    assert evaluation.false_alarms == ()
    assert evaluation.healthy_runs >= 20


def test_each_detector_finds_its_own_pattern(evaluation: Evaluation) -> None:
    for d in evaluation.detectors:
        if d["detector"] not in GENERATED_FOR:
            continue
        assert (d["recall"] or 0) >= 0.75, d
        # a doom loop also makes no progress: only firing on a healthy run is a false positive
        assert 0 < (d["delay_fraction"] or 0) <= 1


def test_captured_runs_read_as_a_person_labels_them(evaluation: Evaluation) -> None:
    by_name = {r.name: r for r in evaluation.runs}
    assert by_name["fx_doom_loop"].fired == ("doom_loop",)
    assert "permission_deadlock" in by_name["fx_permission_deadlock"].fired
    assert "permission_deadlock" in by_name["fx_permission_deadlock_midrun"].fired
    assert by_name["fx_reasoning_loop"].fired[:1] or by_name["fx_reasoning_loop"].correct
    for name in ("fx_healthy", "fx_context_overflow", "fx_permission_denied", "fx_secrets", "fx_aborted"):
        assert by_name[name].fired == (), name


def test_an_alarm_that_cleared_by_the_end_is_still_counted(evaluation: Evaluation) -> None:
    # A long exploration that then edits: no_progress's long-run rule called it stuck at step
    # 20, the edit cleared it. The final verdict is right; a live watcher showed the alarm.
    by_name = {r.name: r for r in evaluation.runs}
    explore = by_name["ok_explore_1"]
    assert explore.stuck == () and explore.ever_stuck == ("no_progress",)
    assert evaluation.passing_alarms == ("ok_explore_1",)
    assert all(
        r.ever_stuck == () for r in evaluation.runs if r.label == "healthy" and r.name != "ok_explore_1"
    )
    assert all(set(r.stuck) <= set(r.ever_stuck) for r in evaluation.runs)
