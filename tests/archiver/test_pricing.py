"""OpenCode turns the server recorded no cost for are priced as Claude Code's are; a recorded cost
is never replaced (unit tests on captured runs, properties on any turn)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from archiver_fakes import tree_from_fixture
from hypothesis import given
from hypothesis import strategies as st

from archiver.archive import serialise
from archiver.claude.prices import Usage, cost_of, use_price_file
from archiver.document import build_documents
from archiver.pricing import price_turns
from archiver.record import record_from_doc
from archiver.redact import Redactor

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "archive-v3.json").read_text())
AT = "2026-11-29T10:00:00.000Z"


def _fx(name: str = "subagent_tree") -> dict[str, Any]:
    return dict(orjson.loads((ROOT / "tests" / "fixtures" / "opencode" / f"{name}.json").read_bytes()))


def _unrecorded(fx: dict[str, Any], provider: str, model: str, keep: str | None = None) -> dict[str, Any]:
    """The captured run as a server that recorded no cost writes it (every session but ``keep``),
    its answers from ``provider``/``model``."""
    fx = copy.deepcopy(fx)
    for sid, msgs in fx["messages"].items():
        for m in msgs:
            info = m["info"]
            if info.get("role") == "assistant" and sid != keep:
                info.update(cost=0, providerID=provider, modelID=model)
    return fx


def _docs(fx: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["session_id"]: d for d in build_documents(tree_from_fixture(fx), archived_at=AT)}


def _usage(t: dict[str, Any]) -> Usage:
    k = t["tokens"]
    return Usage(k["input"], k["output"] + k["reasoning"], k["cache_read"], k["cache_write"])


def test_a_server_that_recorded_costs_keeps_them() -> None:
    fx = _fx()
    docs = _docs(fx)
    recorded = {
        sid: sum(m["info"].get("cost") or 0 for m in msgs if m["info"]["role"] == "assistant")
        for sid, msgs in fx["messages"].items()
    }
    assert any(recorded.values())
    for sid, doc in docs.items():
        assert doc["totals"]["cost"] == pytest.approx(recorded[sid])
        assert doc["cost_check"] is None
        assert {t["cost_source"] for t in doc["per_turn"]} <= {"server", "none"}


def test_unrecorded_costs_are_priced_by_genai_prices_and_summed_up_the_tree() -> None:
    fx = _unrecorded(_fx(), "anthropic", "claude-sonnet-4-5")
    docs = _docs(fx)
    root = docs[fx["root_id"]]
    for doc in docs.values():
        turns = [t for t in doc["per_turn"] if sum(t["tokens"].values())]
        assert turns and {t["cost_source"] for t in turns} == {"genai-prices"}
        for t in turns:
            assert t["cost"] > 0
            assert t["cost"] == pytest.approx(cost_of("claude-sonnet-4-5", _usage(t), at_ms=t["created"]))
        check = doc["cost_check"]
        assert check["computed_usd"] == pytest.approx(doc["totals"]["cost"]) and check["server_usd"] == 0
        assert check["unpriced_models"] == [] and check["prices"]["source"] == "genai-prices"
        assert check["prices"]["version"] == "0.2.3"
        jsonschema.validate(orjson.loads(serialise(doc, Redactor(b"0" * 32))[0]), SCHEMA)
    assert root["subtree"]["cost"] == pytest.approx(sum(d["totals"]["cost"] for d in docs.values()))


def test_a_tree_half_priced_by_its_server_keeps_the_servers_half() -> None:
    fx = _fx()
    child = fx["children"][fx["root_id"]][0]
    before = _docs(fx)[child]["totals"]["cost"]
    docs = _docs(_unrecorded(fx, "openai", "gpt-4o", keep=child))
    assert docs[child]["totals"]["cost"] == pytest.approx(before) and docs[child]["cost_check"] is None
    root = docs[fx["root_id"]]
    assert {t["cost_source"] for t in root["per_turn"]} == {"genai-prices"}
    assert root["cost_check"]["models"].keys() == {"openai/gpt-4o"}


def test_a_provider_nobody_prices_is_named_unpriced_in_the_index_row() -> None:
    fx = _unrecorded(_fx("healthy"), "fake", "fake-model")
    (doc,) = _docs(fx).values()
    assert doc["totals"]["cost"] == 0 and {t["cost_source"] for t in doc["per_turn"]} == {"unpriced"}
    assert doc["cost_check"]["unpriced_models"] == ["fake/fake-model"]
    rec = record_from_doc(doc, "x.json", "h")
    assert rec.unpriced_models == "fake/fake-model"
    assert rec.reported_cost_usd is None and not rec.cost_mismatch


def test_a_price_file_prices_a_gateway_model_by_provider_and_name(tmp_path: Path) -> None:
    f = tmp_path / "prices.json"
    f.write_text(
        '{"models": {"fake/fake-model": {"input": 1, "output": 2, "cache_read": 0, '
        '"cache_write_5m": 0, "cache_write_1h": 0}}}'
    )
    use_price_file(f)
    try:
        (doc,) = _docs(_unrecorded(_fx("healthy"), "fake", "fake-model")).values()
    finally:
        use_price_file(None)
    for turn in doc["per_turn"]:
        k = turn["tokens"]
        assert turn["cost_source"] == "price-file"
        assert turn["cost"] == pytest.approx((k["input"] + 2 * (k["output"] + k["reasoning"])) / 1e6)
    assert doc["cost_check"]["prices"]["price_file"] is True


_tokens = st.fixed_dictionaries({k: st.integers(0, 10**7) for k in ("input", "output", "reasoning")}).map(
    lambda d: d | {"cache_read": d["input"] // 3, "cache_write": d["output"] // 2}
)
_turn = st.fixed_dictionaries(
    {
        "tokens": _tokens,
        "cost": st.one_of(st.just(0.0), st.floats(1e-9, 1e3)),
        "model": st.sampled_from(["claude-sonnet-4-5", "gpt-4o", "no-such-model-x", None, ""]),
        "provider": st.sampled_from(["anthropic", "openai", "fake", None]),
        "created": st.one_of(st.none(), st.integers(1_700_000_000_000, 1_800_000_000_000)),
    }
)


@given(st.lists(_turn, max_size=6))
def test_a_recorded_cost_is_never_replaced_and_nothing_is_free_silently(turns: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(turns)
    unpriced = price_turns(turns)
    for was, t in zip(before, turns, strict=True):
        if was["cost"]:
            assert t["cost"] == was["cost"] and t["cost_source"] == "server"
        elif not sum(was["tokens"].values()):
            assert t["cost"] == 0 and t["cost_source"] == "none"
        elif was["model"] and was["provider"]:
            # priced, or named: never a silent $0
            name = f"{was['provider']}/{was['model']}"
            assert (t["cost_source"] == "genai-prices" and t["cost"] >= 0) or (
                t["cost_source"] == "unpriced" and t["cost"] == 0 and name in unpriced
            )
        assert {k: v for k, v in t.items() if k not in ("cost", "cost_source")} == {
            k: v for k, v in was.items() if k != "cost"
        }


def test_the_message_timeline_shows_octels_price_where_the_server_recorded_none() -> None:
    from telemetry.queries.timeline import message_page

    fx = _unrecorded(_fx("healthy"), "anthropic", "claude-sonnet-4-5")
    (doc,) = _docs(fx).values()
    page = message_page(doc["session_id"], doc, 0, 100)
    costs = {m.index: m.cost_usd for m in page.items if m.role == "assistant"}
    assert costs == {t["index"]: pytest.approx(t["cost"]) for t in doc["per_turn"]}
    assert all(c and c > 0 for c in costs.values())
