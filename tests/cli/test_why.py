"""`octel why`: one verdict per stop, on the labelled corpus, seeded stores and arbitrary signals."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from octelrun import Octel
from storeseed import add, cycle, finding, session

import detectors
from archiver.convert import from_fixture
from archiver.files import write_atomic
from archiver.metrics import per_turn
from detectors.findings import rank_key
from telemetry.queries.why import VERDICTS, Signals, decide, why
from telemetry.store.db import session_scope

CORPUS = Path(__file__).parent.parent / "corpus"
LABELS = sorted(CORPUS.glob("*.label.json"))
CATEGORY = {
    "doom_loop": "loop_detected",
    "compaction_loop": "loop_detected",
    "monologue": "loop_detected",
    "no_progress": "loop_detected",
    "permission_deadlock": "permission_wait",
    "retry_cascade": "retries",
    "silent_stop": "empty_completion",
    "empty_reasoning": "empty_completion",
    "healthy": "completed",
}
DETECTORS = [d for d in CATEGORY if d != "healthy"]
# Recorded runs whose stop is not what their detector label alone says.
SPECIAL = {
    "fx_aborted": "aborted",  # a person aborted a sleep: the last turn carries MessageAbortedError
    "fx_deleted_busy": "empty_completion",  # deleted while busy: no assistant turn left
    "fx_retry_cascade": "completed",  # 503, 429, 503, then success
}


def _corpus_run(label_file: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    label = json.loads(label_file.read_text())
    name = label_file.name.removesuffix(".label.json")
    src = CORPUS / label["session"] if "session" in label else CORPUS / f"{name}.json"
    return name, label, json.loads(src.read_text())


def _seed_corpus_run(octel: Octel, name: str, doc: dict[str, Any]) -> str:
    """Index row, findings from the real detectors, and an archive file, as the archiver leaves them."""
    by_session = doc.get("messages") if isinstance(doc.get("messages"), dict) else {}
    sid = doc.get("root_id") or next(iter(by_session), None) or f"ses_{name}"
    messages = [m for m in by_session.get(sid) or [] if isinstance(m, dict)]
    conv = from_fixture(doc, sid)
    found = detectors.score(conv.messages, status=conv.status, permissions=conv.permissions)
    archive = {
        "schema_version": 2,
        "session_id": sid,
        "root_session_id": sid,
        "messages": messages,
        "per_turn": per_turn(messages),
        "status_history": doc.get("status_samples") or [],
        "permission_events": doc.get("events") or [],
    }
    folder = octel.data_dir / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / f"{name}.json", orjson.dumps(archive))
    worst = detectors.worst_verdict(found)
    add(
        octel.engine,
        session(sid, archive_path=f"{name}.json", verdict=worst, finding_count=len(found)),
        *(finding(sid, f.detector, f.verdict, score=f.score, start_index=f.start_index) for f in found),
    )
    return str(sid)


@pytest.mark.parametrize("label_file", LABELS, ids=lambda p: p.name.removesuffix(".label.json"))
def test_why_on_the_labelled_corpus(octel: Octel, label_file: Path) -> None:
    name, label, doc = _corpus_run(label_file)
    sid = _seed_corpus_run(octel, name, doc)
    with session_scope(octel.engine, write=False) as db:
        got = why(db, sid, octel.data_dir / "archives")
    assert got is not None
    assert got.code == SPECIAL.get(name, CATEGORY[label["label"]]), got
    assert got.evidence, got


def test_why_command_table_and_json(octel: Octel) -> None:
    name, _, doc = _corpus_run(CORPUS / "perm_0.label.json")
    sid = _seed_corpus_run(octel, name, doc)
    add(octel.engine, cycle("cyc-p", "review", session_id=sid, ended_at=None))
    r = octel("why", sid)
    assert r.exit_code == 0, r.output
    assert "permission wait" in r.stdout and "because" in r.stdout and "permission_deadlock" in r.stdout
    got = octel.json("why", sid)
    assert (got["code"], got["kind"], got["cycle_id"]) == ("permission_wait", "session", "cyc-p")
    assert octel.json("why", "cyc-p")["code"] == "permission_wait"  # through the cycle's session


def test_why_cycle_without_session_and_unknown_id(seeded: Octel) -> None:
    got = seeded.json("why", "cyc-2")
    assert (got["code"], got["session_id"]) == ("timed_out", "ses_other")
    assert seeded.json("why", "cyc-3")["code"] == "running"
    assert seeded.json("why", "ses_child_a")["code"] == "loop_detected"
    r = seeded("why", "nothing-like-this")
    assert r.exit_code == 1 and "no session or cycle 'nothing-like-this'" in r.stderr


def test_stuck_finding_outranks_the_timeout_that_ended_it() -> None:
    s = Signals(
        "cycle",
        "c",
        cycle={"cycle_id": "c", "driver": "d", "terminal_state": "failed", "error_kind": "worker_timeout"},
        findings=[{"detector": "doom_loop", "verdict": "stuck", "score": 0.9, "start_index": 3}],
    )
    got = decide(s)
    assert got.code == "loop_detected"
    assert got.evidence[0].source == "finding"
    assert any("worker_timeout" in e.detail for e in got.evidence)


def test_retries_that_end_in_an_error_read_as_retries_and_clean_ends_as_completed() -> None:
    turns_err = [{"tokens": {"output": 5}, "error": "APIError", "error_message": "overloaded"}]
    turns_ok = [{"tokens": {"output": 5}, "finish": "stop"}]
    status = [{"type": "retry", "attempt": 3}]
    assert decide(Signals("session", "s", turns=turns_err, status_history=status)).code == "retries"
    assert decide(Signals("session", "s", turns=turns_err)).code == "error"
    assert decide(Signals("session", "s", turns=turns_ok, status_history=status)).code == "completed"


_finding = st.fixed_dictionaries(
    {
        "detector": st.sampled_from([*DETECTORS, "custom_addon"]),
        "verdict": st.sampled_from(["healthy", "suspect", "stuck"]),
        "score": st.floats(0, 1),
    }
)
_turn = st.fixed_dictionaries(
    {
        "tokens": st.fixed_dictionaries({"output": st.integers(0, 5)}),
        "tool_calls": st.integers(0, 2),
        "finish": st.sampled_from([None, "stop", "tool-calls", "length"]),
        "error": st.sampled_from([None, None, "MessageAbortedError", "APIError"]),
        "in_flight": st.booleans(),
    }
)
_cycle = st.none() | st.fixed_dictionaries(
    {
        "cycle_id": st.just("c"),
        "driver": st.just("d"),
        "in_flight": st.booleans(),
        "terminal_state": st.sampled_from([None, "done", "failed", "aborted", "timeout"]),
        "error_kind": st.sampled_from([None, "worker_timeout", "crash"]),
    }
)


@given(
    findings=st.lists(_finding, max_size=4),
    turns=st.none() | st.lists(_turn, max_size=3),
    cyc=_cycle,
    status=st.lists(st.fixed_dictionaries({"type": st.sampled_from(["busy", "retry", "idle"])}), max_size=3),
    asks=st.lists(st.sampled_from(["a1", "a2"]), max_size=2),
    replies=st.lists(st.sampled_from(["a1", "a2"]), max_size=2),
)
def test_decide_always_gives_one_known_verdict_with_its_evidence_first(
    findings: list[dict[str, Any]],
    turns: list[dict[str, Any]] | None,
    cyc: dict[str, Any] | None,
    status: list[dict[str, Any]],
    asks: list[str],
    replies: list[str],
) -> None:
    perms = [{"kind": "asked", "request_id": a, "permission": "bash"} for a in asks]
    perms += [{"kind": "replied", "request_id": r} for r in replies]
    got = decide(Signals("session", "s", {"session_id": "s"}, findings, cyc, turns, status, perms))
    assert got.code in VERDICTS and got.verdict == VERDICTS[got.code]
    assert got.evidence and got.summary.endswith(got.evidence[0].detail)
    stuck = [f for f in findings if f["verdict"] == "stuck" and f["detector"] in DETECTORS]
    if stuck:
        # the one rank of every headline: the cause before its symptoms, then the score
        top = min(stuck, key=lambda f: rank_key(f["detector"], f["verdict"], f["score"]))
        assert got.code == CATEGORY[top["detector"]]


def test_why_json_shape(seeded: Octel, golden: Callable[[str, Any], None]) -> None:
    got = seeded.json("why", "cyc-2")
    for e in got["evidence"]:
        if e["source"] == "archive":
            e["detail"] = "<archive file missing>"
    golden("why_cycle", got)
