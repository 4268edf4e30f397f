"""The labelled corpus: regenerating it gives the same files, every session is labelled, and the
detectors reach recall >= 0.95 on stuck runs with no false alarm on healthy ones."""

from __future__ import annotations

import json
from pathlib import Path

import gen_corpus
import pytest

from cli.detect import load_corpus
from detectors import REGISTRY
from detectors.evaluation import Evaluation, evaluate

CORPUS = Path(__file__).parents[1] / "corpus"


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
    for name in REGISTRY.names():
        assert labels.count(name) >= 3, name
    notes = {json.loads(p.read_text()).get("note") for p in CORPUS.glob("*.label.json")}
    for hard in ("polling with sleep", "a long build", "many different reads",
                 "test-fix-test that makes progress", "long reasoning before a big edit"):  # fmt: skip
        assert hard in notes
    assert sum(1 for r in runs if r.name.startswith("fx_")) >= 15  # captured from a real server


def test_recall_on_stuck_runs_and_no_false_alarm(evaluation: Evaluation) -> None:
    assert evaluation.stuck_recall is not None and evaluation.stuck_recall >= 0.95
    assert evaluation.false_alarms == ()
    assert evaluation.healthy_runs >= 20


def test_each_detector_finds_its_own_pattern(evaluation: Evaluation) -> None:
    for d in evaluation.detectors:
        assert d.recall is not None and d.recall >= 0.95, d
        assert d.precision is not None and d.precision >= 0.9, d
        assert d.delay_fraction is not None and 0 < d.delay_fraction <= 1


def test_captured_runs_read_as_a_person_labels_them(evaluation: Evaluation) -> None:
    by_name = {r.name: r for r in evaluation.runs}
    assert by_name["fx_doom_loop"].fired == ("doom_loop",)
    assert "permission_deadlock" in by_name["fx_permission_deadlock"].fired
    assert "permission_deadlock" in by_name["fx_permission_deadlock_midrun"].fired
    assert by_name["fx_reasoning_loop"].fired[:1] or by_name["fx_reasoning_loop"].correct
    for name in ("fx_healthy", "fx_context_overflow", "fx_permission_denied", "fx_secrets", "fx_aborted"):
        assert by_name[name].fired == (), name
