"""The mapping from a session tree to spans: ids, nesting, times, tokens, content opt-in."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otel_trees import trees

from archiver.document import build_documents
from telemetry.otel_export.conventions import ATTRIBUTES, SEMCONV_VERSION
from telemetry.otel_export.mapping import CycleFacts, tree_spans
from telemetry.otel_export.spans import SpanRecord, span_id, trace_id

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"
CONTENT_KEYS = {a.key for a in ATTRIBUTES if a.content}
TOKENS = ("input", "output", "reasoning", "cache_read", "cache_write")


def _by_id(spans: list[SpanRecord]) -> dict[int, SpanRecord]:
    return {s.span_id: s for s in spans}


def fixture_docs(name: str) -> list[dict[str, Any]]:
    from archiver_fakes import tree_from_fixture

    fx = json.loads((FIXTURES / f"{name}.json").read_text())
    return build_documents(tree_from_fixture(fx), archived_at="2026-11-30T12:00:00+00:00")


@settings(max_examples=60, deadline=None)
@given(trees(), st.randoms(use_true_random=False))
def test_ids_are_stable_unique_and_in_one_trace(tree: Any, rnd: random.Random) -> None:
    docs, _ = tree
    spans = tree_spans(docs)
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    again = tree_spans(shuffled)
    assert sorted(spans, key=lambda s: s.span_id) == sorted(again, key=lambda s: s.span_id)
    ids = [s.span_id for s in spans]
    assert len(ids) == len(set(ids)), "span ids are unique"
    assert all(0 < i < 2**64 for i in ids)
    assert {s.trace_id for s in spans} == {trace_id(docs[0]["root_session_id"])}
    by = _by_id(spans)
    roots = [s for s in spans if s.parent_span_id is None]
    assert len(roots) == 1 and roots[0].name.startswith("invoke_agent ")
    for s in spans:
        assert s.start_ns <= s.end_ns
        if s.parent_span_id is not None:
            parent = by[s.parent_span_id]  # every parent is a span of the same trace
            assert parent.start_ns <= s.start_ns and s.end_ns <= parent.end_ns
        for e in s.events:
            assert s.start_ns <= e.time_ns <= s.end_ns


@settings(max_examples=60, deadline=None)
@given(trees())
def test_a_subagent_hangs_under_the_task_call_that_launched_it(tree: Any) -> None:
    docs, launched = tree
    spans = tree_spans(docs)
    by = _by_id(spans)
    agents = {s.attributes["octel.session.id"]: s for s in spans if s.name.startswith("invoke_agent ")}
    assert set(agents) == {d["session_id"] for d in docs}
    for d in docs:
        span = agents[d["session_id"]]
        assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
        if d["parent_session_id"] is None:
            continue
        parent = by[span.parent_span_id or 0]
        if d["session_id"] in launched:
            assert parent.name == "execute_tool task"
            assert parent.attributes["octel.part.id"] == launched[d["session_id"]]
            assert parent.attributes["octel.session.id"] == d["parent_session_id"]
        else:
            assert parent is agents[d["parent_session_id"]]


@settings(max_examples=60, deadline=None)
@given(trees())
def test_token_totals_and_cost_equal_the_archive(tree: Any) -> None:
    docs, _ = tree
    spans = tree_spans(docs)
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == sum(d["totals"]["turns"] for d in docs)
    for k in TOKENS:
        assert sum(int(s.attributes[f"octel.tokens.{k}"]) for s in chats) == sum(
            d["totals"]["tokens"][k] for d in docs
        )
    assert sum(int(s.attributes["llm.token_count.total"]) for s in chats) == sum(
        d["totals"]["tokens_total"] for d in docs
    )
    root = next(d for d in docs if d["depth"] == 0)
    assert sum(float(s.attributes["octel.cost_usd"]) for s in chats) == pytest.approx(root["subtree"]["cost"])
    for s in chats:
        a = s.attributes
        assert (
            a["gen_ai.usage.input_tokens"]
            == a["octel.tokens.input"] + a["octel.tokens.cache_read"] + a["octel.tokens.cache_write"]
        )
        assert a["gen_ai.usage.output_tokens"] == a["octel.tokens.output"] + a["octel.tokens.reasoning"]
        assert (s.status == "ERROR") == ("error.type" in a)


@settings(max_examples=40, deadline=None)
@given(trees())
def test_content_only_when_asked(tree: Any) -> None:
    docs, _ = tree
    plain = tree_spans(docs)
    assert not any(CONTENT_KEYS & set(s.attributes) for s in plain)
    full = tree_spans(docs, content=True)
    assert [s.span_id for s in full] == [s.span_id for s in plain]
    prompts = [s for s in full if "gen_ai.input.messages" in s.attributes]
    for s in prompts:  # the prompt is the user message the turn answers, as archived
        sid = s.attributes["octel.session.id"]
        assert f"prompt for {sid}" in str(s.attributes["gen_ai.input.messages"])


@settings(max_examples=40, deadline=None)
@given(trees(), st.booleans())
def test_a_cycle_is_the_parent_of_the_tree(tree: Any, finished: bool) -> None:
    docs, _ = tree
    root = next(d for d in docs if d["depth"] == 0)
    cycle = CycleFacts(
        "cyc-1",
        "review",
        1_600_000_000_000,
        1_900_000_000_000 if finished else None,
        {"candidates": 3, "claims": 1},
        "done",
        "merged",
        None,
    )
    spans = tree_spans(docs, cycle=cycle)
    top = [s for s in spans if s.parent_span_id is None]
    assert len(top) == 1 and top[0].name == "dispatch_cycle review"
    assert top[0].span_id == span_id(root["session_id"], "cycle:cyc-1")
    agent = next(
        s
        for s in spans
        if s.attributes.get("octel.session.id") == root["session_id"] and s.name.startswith("invoke_agent")
    )
    assert agent.parent_span_id == top[0].span_id and agent.attributes["octel.cycle.id"] == "cyc-1"
    assert top[0].attributes["octel.cycle.in_flight"] is (not finished)
    # the tree's own ids do not depend on the cycle
    assert {s.span_id for s in tree_spans(docs)} == {s.span_id for s in spans} - {top[0].span_id}


def test_the_captured_subagent_tree() -> None:
    docs = fixture_docs("subagent_tree")
    spans = tree_spans(docs)
    by = _by_id(spans)
    names = [s.name for s in spans]
    assert names.count("invoke_agent build") == 1
    assert {
        "invoke_agent nester",
        "invoke_agent general",
        "chat fake-model",
        "execute_tool task",
        "execute_tool bash",
        "execute_tool read",
    } <= set(names)
    nester = next(s for s in spans if s.name == "invoke_agent nester")
    task = by[nester.parent_span_id or 0]
    assert task.name == "execute_tool task" and task.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert by[task.parent_span_id or 0].name == "chat fake-model"
    root = next(s for s in spans if s.parent_span_id is None)
    assert root.attributes["gen_ai.conversation.id"] == root.attributes["session.id"] == docs[0]["session_id"]
    assert root.attributes["gen_ai.provider.name"] == "fake"
    chat = next(s for s in spans if s.name == "chat fake-model")
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool-calls"]
    assert chat.kind == "CLIENT" and chat.attributes["openinference.span.kind"] == "LLM"


def test_a_finding_is_an_evaluation_event_on_its_session() -> None:
    docs = fixture_docs("doom_loop")
    doom = [f for d in docs for f in d["findings"] if f["detector"] == "doom_loop"]
    assert doom and doom[0]["verdict"] != "healthy"
    spans = tree_spans(docs)
    events = [
        (s, e) for s in spans for e in s.events if e.attributes["gen_ai.evaluation.name"] == "doom_loop"
    ]
    assert len(events) == 1
    span, event = events[0]
    assert span.name.startswith("invoke_agent") and event.name == "gen_ai.evaluation.result"
    assert event.attributes["gen_ai.evaluation.score.label"] == doom[0]["verdict"]
    assert event.attributes["gen_ai.evaluation.score.value"] == doom[0]["score"]
    assert "repeated" in str(event.attributes["gen_ai.evaluation.explanation"])


def test_one_tree_at_a_time() -> None:
    a, b = fixture_docs("subagent_tree"), fixture_docs("healthy")
    with pytest.raises(ValueError, match="2 trees"):
        tree_spans([*a, *b])
    with pytest.raises(ValueError):
        tree_spans([])


def test_every_exported_attribute_is_declared_and_documented() -> None:
    declared = {a.key for a in ATTRIBUTES}
    seen: set[str] = set()
    for name in ("subagent_tree", "doom_loop", "tool_errors", "context_overflow"):
        cycle = CycleFacts("c", "d", 0, 1, {"claims": 1}, "done", "ok", "boom")
        for s in tree_spans(fixture_docs(name), cycle=cycle, content=True):
            seen |= set(s.attributes)
            for e in s.events:
                seen |= set(e.attributes)
    assert seen <= declared, seen - declared
    doc = (Path(__file__).resolve().parents[2] / "docs" / "otel.md").read_text()
    assert SEMCONV_VERSION in doc
    missing = [k for k in declared if f"`{k}`" not in doc]
    assert not missing, f"docs/otel.md does not list {missing}"


def test_gen_ai_keys_are_those_of_the_pinned_conventions() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv.schemas import Schemas

    known = {v for k, v in vars(gen_ai_attributes).items() if k.isupper() and isinstance(v, str)}
    ours = {a.key for a in ATTRIBUTES if a.key.startswith("gen_ai.")}
    assert ours <= known, ours - known
    assert f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}" in {s.value for s in Schemas}
