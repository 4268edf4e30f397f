"""Every stuck run of every labelled corpus says where its stall begins and ends, and the
evaluation measures the finding's span against it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.detect_eval import load_corpus
from detectors.evaluation import HEALTHY, LabelledRun, evaluate, span_overlap
from detectors.model import Message, Text, ToolCall

CORPUS = Path(__file__).parents[1] / "corpus"
SETS = [CORPUS, CORPUS / "claude_field"] + [
    p for group in ("real", "claude") for p in sorted((CORPUS / group).iterdir()) if p.is_dir()
]


@pytest.mark.parametrize("folder", SETS, ids=[str(p.relative_to(CORPUS)) or "generated" for p in SETS])
def test_every_stuck_label_gives_its_span(folder: Path) -> None:
    runs = load_corpus(folder)
    assert runs
    for r in runs:
        if r.label == HEALTHY:
            continue
        # Every stall in these corpora lasts until the run stops: no person stepped in.
        assert 0 <= r.pattern_start <= r.pattern_end == len(r.messages) - 1, r.name


spans = st.tuples(st.integers(0, 50), st.integers(0, 50))


@given(a=spans, b=spans)
def test_span_overlap_is_a_symmetric_share(a: tuple[int, int], b: tuple[int, int]) -> None:
    v = span_overlap(a, b)
    assert v == span_overlap(b, a)
    assert 0.0 <= v <= 1.0
    assert span_overlap(a, a) == 1.0
    disjoint = max(a) < min(b) or max(b) < min(a)
    assert (v == 0.0) == disjoint


def _call(k: int) -> Message:
    call = ToolCall(f"p{k}", "bash", '{"command":"git status"}', "completed", output="M a.py")
    return Message(f"m{k}", "assistant", k, (call,))


def test_the_evaluation_reports_how_the_finding_overlaps_the_labelled_span() -> None:
    user = Message("m0", "user", 0, (Text("t0", "Check the tree."),))
    messages = [user, *(_call(k) for k in range(1, 9))]
    # the loop began at message 1; a label that puts the onset later overlaps less
    early = evaluate([LabelledRun("a", "doom_loop", messages, pattern_start=1, pattern_end=8)])
    late = evaluate([LabelledRun("a", "doom_loop", messages, pattern_start=5, pattern_end=8)])
    assert early.runs[0].overlap == 1.0
    assert late.runs[0].overlap is not None and late.runs[0].overlap < 1.0
    assert early.mean_overlap == 1.0
