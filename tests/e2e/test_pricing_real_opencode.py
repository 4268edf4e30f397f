"""End to end: a real `opencode serve` answering from a model with no cost configured records
cost 0; octel names the model unpriced, and prices it once a price file lists it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from driver import wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select

from archiver.claude.prices import use_price_file
from telemetry.archive_store import archive_store
from telemetry.archiving import archive_session_tree
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.opencode

MODEL = {"providerID": "fake", "modelID": "fake-free"}


def _answered(http: httpx.Client) -> tuple[str, dict[str, Any]]:
    root = str(http.post("/session", json={}).json()["id"])
    body = {"model": MODEL, "parts": [{"type": "text", "text": "Say done."}]}
    assert http.post(f"/session/{root}/prompt_async", json=body).status_code in (200, 204)

    def done() -> dict[str, Any] | None:
        if root in http.get("/session/status").json():
            return None
        msgs = http.get(f"/session/{root}/message").json()
        last = msgs[-1]["info"] if msgs else {}
        return last if last.get("role") == "assistant" and "completed" in last.get("time", {}) else None

    return root, wait_for(done, timeout=60)


def _archive(root: str, url: str, settings: Settings) -> tuple[SessionIndex, dict[str, Any]]:
    engine = make_engine(f"sqlite:///{settings.data_dir / 'octel.db'}")
    upgrade(engine)
    try:
        outcome = archive_session_tree(root, settings=settings, engine=engine, server_url=url)
        assert outcome.ok, outcome.to_dict()
        with session_scope(engine, write=False) as db:
            row = db.exec(select(SessionIndex).where(SessionIndex.session_id == root)).one()
            db.expunge(row)
        doc = orjson.loads(archive_store(settings, engine).read(row.archive_path))
    finally:
        engine.dispose()
    return row, doc


def test_a_model_the_server_has_no_price_for(opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.load({"title": "Pricing", "turns": [{"text": "done"}], "default": {"text": "done"}})
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        root, info = _answered(http)
    tokens = info["tokens"]
    assert info["modelID"] == "fake-free" and tokens["input"] > 0 and tokens["output"] > 0
    assert not info.get("cost"), "the server priced a model with no cost configured"
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]

    row, doc = _archive(root, opencode.url, settings)
    assert row.unpriced_models == "fake/fake-free" and row.cost_usd == 0
    assert {t["cost_source"] for t in doc["per_turn"]} == {"unpriced"}
    assert doc["cost_check"]["unpriced_models"] == ["fake/fake-free"]

    prices = tmp_path / "prices.json"
    one = {"input": 2.0, "output": 10.0, "cache_read": 0.5, "cache_write_5m": 2.5, "cache_write_1h": 4.0}
    prices.write_text(orjson.dumps({"models": {"fake/fake-free": one}}).decode())
    priced = Settings(data_dir=tmp_path / "data", price_file=prices, _env_file=None)  # type: ignore[call-arg]
    try:
        row, doc = _archive(root, opencode.url, priced)
    finally:
        use_price_file(None)
    (turn,) = doc["per_turn"]
    t = turn["tokens"]
    expected = (
        2 * t["input"] + 10 * (t["output"] + t["reasoning"]) + 0.5 * t["cache_read"] + 2.5 * t["cache_write"]
    ) / 1e6
    assert turn["cost_source"] == "price-file" and turn["cost"] == pytest.approx(expected) and expected > 0
    assert row.cost_usd == pytest.approx(expected) and row.unpriced_models is None
    assert doc["cost_check"]["prices"]["price_file"] is True and doc["cost_check"]["server_usd"] == 0
