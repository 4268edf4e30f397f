"""`octel costs --reprice`: stored OpenCode archives priced again at the prices in use now; the
costs a server recorded stay, sessions archived before octel priced any are priced too."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from octelrun import Octel
from sqlmodel import select

from archiver.archive import ArchiveResult, write_documents
from archiver.document import build_documents
from archiver.redact import Redactor
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

sys.path.insert(0, str(Path(__file__).parents[1] / "archiver"))
from archiver_fakes import tree_from_fixture

FX = Path(__file__).parents[1] / "fixtures" / "opencode" / "subagent_tree.json"
AT = "2026-11-29T10:00:00.000Z"
ONE = {"input": 1.0, "output": 2.0, "cache_read": 0.0, "cache_write_5m": 0.0, "cache_write_1h": 0.0}


def _archived(folder: Path, *, before_pricing: bool) -> tuple[dict[str, Any], str]:
    """Archive files of the captured tree as a server that recorded no cost for the root and the
    grandchild wrote it (the child's costs recorded); ``before_pricing``: as an octel that did not
    price OpenCode turns wrote them."""
    fx = orjson.loads(FX.read_bytes())
    child = fx["children"][fx["root_id"]][0]
    for sid, msgs in fx["messages"].items():
        for m in msgs:
            if m["info"].get("role") == "assistant" and sid != child:
                m["info"].update(cost=0, providerID="fake", modelID="fake-model")
    docs = build_documents(tree_from_fixture(fx), archived_at=AT)
    if before_pricing:
        for d in docs:
            d["cost_check"] = None
            for t in d["per_turn"]:
                t.pop("cost_source")
    write_documents(docs, folder, Redactor(b"0" * 32), ArchiveResult(fx["root_id"], AT))
    return fx, child


def _rows(octel: Octel) -> dict[str, SessionIndex]:
    with session_scope(octel.engine, write=False) as db:
        rows = {r.session_id: r for r in db.exec(select(SessionIndex))}
        db.expunge_all()
    return rows


@pytest.mark.parametrize("before_pricing", [False, True])
def test_reprice_prices_what_octel_priced_and_keeps_the_servers(
    octel: Octel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_pricing: bool
) -> None:
    fx, child = _archived(tmp_path / "in", before_pricing=before_pricing)
    assert octel("import", "archives", str(tmp_path / "in")).exit_code == 0
    first = _rows(octel)
    assert first[child].cost_usd > 0 and first[fx["root_id"]].cost_usd == 0
    if not before_pricing:
        assert first[fx["root_id"]].unpriced_models == "fake/fake-model"

    prices = tmp_path / "prices.json"
    prices.write_text(orjson.dumps({"models": {"fake/fake-model": ONE}}).decode())
    monkeypatch.setenv("OCTEL_PRICE_FILE", str(prices))
    r = octel("costs", "--reprice", "--since", "all", "--json")
    assert r.exit_code == 0, r.output + r.stderr
    # the child's own costs are its server's; its subtree holds the repriced grandchild
    assert "repriced 3 of 3 OpenCode sessions (1 trees) by genai-prices 0.2.3 and the price file" in r.stderr
    after = _rows(octel)
    assert after[child].cost_usd == first[child].cost_usd
    assert after[child].subtree_cost_usd > first[child].subtree_cost_usd
    root = after[fx["root_id"]]
    assert root.cost_usd > 0 and root.unpriced_models is None
    assert root.subtree_cost_usd == pytest.approx(sum(r.cost_usd for r in after.values()))
    shown = octel.json("sessions", "show", fx["root_id"])
    assert sum(t["cost_usd"] for t in shown["per_turn"]) == pytest.approx(root.cost_usd)
    doc = orjson.loads((octel.data_dir / "archives" / root.archive_path).read_bytes())
    assert {t["cost_source"] for t in doc["per_turn"]} == {"price-file"}
    assert doc["cost_check"]["prices"]["price_file"] is True
    costs = orjson.loads(r.stdout)
    assert costs["totals"]["cost_usd"] == pytest.approx(sum(r.cost_usd for r in after.values()))

    # at the same prices again: nothing to write
    again = octel("costs", "--reprice", "--since", "all", "--json")
    assert again.exit_code == 0 and "repriced 0 of 3" in again.stderr
    assert _rows(octel)[fx["root_id"]].content_hash == root.content_hash

    # without the price file the model is unpriced again, and said so
    monkeypatch.delenv("OCTEL_PRICE_FILE")
    gone = octel("costs", "--reprice", "--since", "all")
    assert gone.exit_code == 0 and "unpriced (no price known): fake/fake-model" in gone.stderr
    assert _rows(octel)[fx["root_id"]].cost_usd == 0
