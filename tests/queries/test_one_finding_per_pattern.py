"""One finding per pattern per session: once archived, the archive's finding of a pattern
supersedes the live probe's (`get_session`, which the session page, `sessions show` and `why`
all read); and the headline is chosen by one total rank, so the same findings name the same
pattern whatever order they come in (the live board's `worst_detector` flipped between
`retry_cascade` and `doom_loop` across refreshes while the archive said `doom_loop`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from storeseed import add, finding, session

from archiver.record import record_from_doc
from detectors.findings import dominant_of
from telemetry.queries.live import describe_all
from telemetry.queries.sessions import get_session
from telemetry.queries.why import Signals, decide
from telemetry.store.db import session_scope
from telemetry.tower.live import _worst

LOOP = {"signature": ['bash {"command":"make"}'], "repetitions": 11}


def test_the_archive_finding_supersedes_the_live_one(engine: Engine) -> None:
    add(
        engine,
        session("ses_a"),
        finding("ses_a", "doom_loop", "stuck", source="live", evidence=LOOP),
        finding("ses_a", "doom_loop", "stuck", source="archive", evidence={**LOOP, "repetitions": 113}),
        finding("ses_a", "permission_deadlock", "suspect", source="live", evidence={"signal": "denials"}),
    )
    with session_scope(engine, write=False) as db:
        got = get_session(db, "ses_a")
    assert got is not None
    found = [(f.detector, f.source) for f in got.findings]
    stored = [f.model_dump() for f in got.findings]
    # the live doom_loop is gone; a pattern only the live probe saw stays
    assert sorted(found) == [("doom_loop", "archive"), ("permission_deadlock", "live")]
    said = [f["sentence"] for f in describe_all(stored, None)]
    assert any("113 times" in s for s in said) and not any("11 times" in s for s in said)
    verdict = decide(Signals(kind="session", ident="ses_a", findings=stored))
    assert not any("11 times" in e.detail for e in verdict.evidence)


_FINDING = st.fixed_dictionaries(
    {
        "detector": st.sampled_from(["doom_loop", "retry_cascade", "no_progress", "silent_stop", "my_addon"]),
        "verdict": st.sampled_from(["healthy", "suspect", "stuck"]),
        "score": st.sampled_from([0.5, 0.8, 1.0]),
        "evidence": st.just({}),
    }
)


def _unique(fs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({f["detector"]: f for f in fs}.values())


@given(st.lists(_FINDING, max_size=6).map(_unique), st.randoms())
def test_the_headline_does_not_depend_on_the_order_of_the_findings(
    fs: list[dict[str, Any]], rnd: Any
) -> None:
    shuffled = list(fs)
    rnd.shuffle(shuffled)
    assert _worst(fs) == _worst(shuffled)
    named = dominant_of(fs)
    assert _worst(fs) == (named["detector"] if named else None)
    doc = {"session_id": "s", "findings": shuffled, "totals": {"turns": 1}}
    assert record_from_doc(doc, "s.json", "h").worst_detector == (named["detector"] if named else None)


def test_one_failing_call_named_the_same_live_and_archived() -> None:
    both = [
        {"detector": "retry_cascade", "verdict": "stuck", "score": 1.0, "evidence": {}},
        {"detector": "doom_loop", "verdict": "stuck", "score": 1.0, "evidence": {}},
    ]
    assert _worst(both) == _worst(both[::-1]) == "doom_loop"


def test_live_findings_carry_the_archive_sentence_and_evidence() -> None:
    live = [
        {
            "detector": "doom_loop",
            "verdict": "stuck",
            "score": 1.0,
            "start_index": 3,
            "evidence": {**LOOP, "part_ids": ["prt_abcdef123456"]},
        }
    ]
    (f,) = describe_all(live, None)
    assert f["sentence"].startswith("`make` (bash) ran 11 times") and "message 4" in f["sentence"]
    assert f["evidence_links"] == [{"id": "prt_abcdef123456", "kind": "part", "label": "part …123456"}]
