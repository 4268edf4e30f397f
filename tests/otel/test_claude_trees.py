"""Claude Code session trees as traces: one connected trace, each subagent's `invoke_agent` under
the `execute_tool Agent` (`Task`) span of the call that launched it, tool calls with their outcome,
tokens equal to octel's. From captured transcripts (tests/fixtures/claude)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from otlp_receiver import OTLPReceiver
from typer.testing import CliRunner

from archiver.claude.document import build_claude_documents
from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from cli import app
from telemetry.otel_export.claude_tools import tool_parts
from telemetry.otel_export.mapping import encoded_tree_spans, tree_spans
from telemetry.otel_export.resource import encoder_for
from telemetry.otel_export.spans import SpanRecord, trace_id

CLAUDE = Path(__file__).resolve().parents[1] / "fixtures" / "claude"
TOKENS = ("input", "output", "reasoning", "cache_read", "cache_write")


def claude_docs(run: str) -> list[dict[str, Any]]:
    (files,) = find_sessions(CLAUDE / run)
    return build_claude_documents(load_tree(files), archived_at="2026-11-30T12:00:00+00:00")


def connected(spans: list[SpanRecord]) -> dict[int, SpanRecord]:
    by = {s.span_id: s for s in spans}
    assert len(by) == len(spans), "span ids are unique"
    assert len({s.trace_id for s in spans}) == 1
    assert [s.name for s in spans if s.parent_span_id is None] == ["invoke_agent main"]
    assert all(s.parent_span_id is None or s.parent_span_id in by for s in spans), "no broken links"
    return by


@pytest.mark.parametrize(
    "run", ["d_subagent_tree/json", "d_subagent_tree/stream-json", "d2_subagent_background/json"]
)
def test_a_subagent_hangs_under_the_agent_call_that_launched_it(run: str) -> None:
    docs = claude_docs(run)
    assert len(docs) == 2
    spans = tree_spans(docs)
    by = connected(spans)
    (sub,) = [s for s in spans if s.name == "invoke_agent general-purpose"]
    launcher = by[sub.parent_span_id or 0]
    assert launcher.name == "execute_tool Agent"
    assert launcher.attributes["gen_ai.tool.call.id"] == docs[1]["claude"]["tool_use_id"]
    assert launcher.attributes["octel.session.id"] == docs[0]["session_id"]
    assert launcher.attributes["octel.tool.status"] == "completed"
    # the subagent's own work is inside it: its turns and its Bash call
    bash = next(s for s in spans if s.name == "execute_tool Bash")
    assert by[by[bash.parent_span_id or 0].parent_span_id or 0] is sub
    for s in spans:
        if s.parent_span_id is not None:
            assert by[s.parent_span_id].start_ns <= s.start_ns <= s.end_ns <= by[s.parent_span_id].end_ns


@pytest.mark.parametrize("run", ["d_subagent_tree/json", "c_doom_loop/json", "e2_retry_429_500/json"])
def test_tokens_and_cost_equal_octels(run: str) -> None:
    docs = claude_docs(run)
    spans = tree_spans(docs)
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    root = docs[0]
    total = sum(root["subtree"]["tokens"][k] for k in TOKENS)
    assert sum(s.attributes["llm.token_count.total"] for s in chats) == total > 0
    for d in docs:
        own = [s for s in chats if s.attributes["octel.session.id"] == d["session_id"]]
        assert len(own) == d["totals"]["turns"]
        for k in TOKENS:
            assert sum(s.attributes[f"octel.tokens.{k}"] for s in own) == d["totals"]["tokens"][k]
        assert sum(s.attributes["octel.cost_usd"] for s in own) == pytest.approx(d["totals"]["cost"])
        assert {s.attributes["gen_ai.provider.name"] for s in own} == {"anthropic"}


def test_failed_calls_and_findings_of_a_doom_loop() -> None:
    docs = claude_docs("c_doom_loop/json")
    spans = tree_spans(docs, content=True)
    tools = [s for s in spans if s.name == "execute_tool Bash"]
    assert len(tools) == docs[0]["totals"]["tool_calls"] == docs[0]["totals"]["tool_errors"]
    assert all(s.status == "ERROR" and s.attributes["error.type"] == "tool_error" for s in tools)
    assert all(json.loads(s.attributes["gen_ai.tool.call.arguments"])["command"] for s in tools)
    root = spans[0]
    assert {e.attributes["gen_ai.evaluation.name"] for e in root.events} >= {"doom_loop"}
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert "gen_ai.input.messages" in chat.attributes, "the first turn carries the prompt"


_call_ids = st.lists(st.sampled_from(["t1", "t2", "t3", "t4"]), unique=True, max_size=4)


@given(_call_ids, st.data())
def test_every_call_becomes_one_tool_part_with_its_outcome(calls: list[str], data: st.DataObject) -> None:
    answered = {c: data.draw(st.sampled_from([None, True, False]), label=c) for c in calls}
    messages: list[dict[str, Any]] = [
        {
            "info": {"id": "a1", "role": "assistant", "time": {"created": 10, "completed": 20}},
            "parts": [{"type": "text", "text": "go"}]
            + [{"type": "tool_use", "id": c, "name": "Bash", "input": {"n": c}} for c in calls],
        },
        {
            "info": {"id": "u1", "role": "user", "time": {"created": 50}},
            "parts": [
                {
                    "type": "tool_result",
                    "tool_use_id": c,
                    "is_error": bad,
                    "content": [{"type": "text", "text": c}],
                }
                for c, bad in answered.items()
                if bad is not None
            ],
        },
    ]
    got = tool_parts(messages).get("a1", [])
    assert [p["callID"] for p in got] == calls
    for p in got:
        bad = answered[p["callID"]]
        state = p["state"]
        assert state["status"] == {None: "pending", True: "error", False: "completed"}[bad]
        assert state["time"]["start"] == 20
        assert state["time"].get("end") == (None if bad is None else 50)
        if bad is not None:
            assert state["error" if bad else "output"] == p["callID"]


def test_imported_claude_tree_exports_as_one_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "claude"
    shutil.copytree(CLAUDE / "d_subagent_tree" / "json", cfg)
    base = ["--data-dir", str(tmp_path / "data")]
    r = CliRunner().invoke(app, [*base, "import", "claude", str(cfg), "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (files,) = find_sessions(cfg)
    root = load_tree(files).root_id
    with OTLPReceiver() as rx:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint)
        r = CliRunner().invoke(app, [*base, "export", "otel", root, "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["exported"] == got["spans"] == len(rx.spans) == 8
    assert {s.trace_id for s in rx.spans} == {f"{trace_id(root):032x}"}
    by = {s.span_id: s for s in rx.spans}
    sub = next(s for s in rx.spans if s.name == "invoke_agent general-purpose")
    assert by[sub.parent_span_id].name == "execute_tool Agent"
    assert all(not s.parent_span_id or s.parent_span_id in by for s in rx.spans)


@pytest.mark.parametrize("run", ["d_subagent_tree/json", "c_doom_loop/json"])
def test_a_document_without_per_turn_entries_maps_the_same(run: str) -> None:
    """Spans read the archive's own per-turn entries; an archive without them (version 1) gets
    them computed, by the reader of its source."""
    docs = claude_docs(run)
    bare = [{k: v for k, v in d.items() if k != "per_turn"} for d in docs]
    assert tree_spans(bare) == tree_spans(docs)


@pytest.mark.parametrize("run", ["d_subagent_tree/json", "c_doom_loop/json", "e2_retry_429_500/stream-json"])
@pytest.mark.parametrize("content", [False, True])
def test_the_spans_sent_are_the_records_encoded(run: str, content: bool) -> None:
    """The export writes span bytes straight from the documents: the same request as the span
    records (which the SDK's encoder is checked against) make."""
    docs = claude_docs(run)
    enc = encoder_for("octel", {})
    assert enc.request(encoded_tree_spans(docs, enc, content=content)) == enc.encode(
        tree_spans(docs, content=content)
    )


def test_every_attribute_of_a_claude_tree_is_declared_and_documented() -> None:
    from telemetry.otel_export.conventions import ATTRIBUTES

    declared = {a.key for a in ATTRIBUTES}
    seen: set[str] = set()
    for run in ("d_subagent_tree/json", "c_doom_loop/json", "e2_retry_429_500/json"):
        for s in tree_spans(claude_docs(run), content=True):
            seen |= set(s.attributes) | {k for e in s.events for k in e.attributes}
    assert seen <= declared, seen - declared
