"""The OpenAPI document describes every answer of the read API, and is checked in (docs/openapi.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from telemetry.settings import Settings
from web.app import create_app

SNAPSHOT = Path(__file__).parent.parent.parent / "docs" / "openapi.json"


def _openapi(tmp_path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = create_app(Settings(data_dir=tmp_path)).openapi()
    return doc


def test_every_read_route_declares_its_answer(tmp_path: Path) -> None:
    doc = _openapi(tmp_path)
    reads = {p: ops["get"] for p, ops in doc["paths"].items() if p.startswith("/api/") and "get" in ops}
    assert {"/api/sessions", "/api/sessions/{session_id}", "/api/costs", "/api/health"} <= set(reads)
    for path, op in reads.items():
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema, f"GET {path} does not describe its answer"
    detail = doc["components"]["schemas"]["SessionDetail"]["properties"]
    assert {"session", "findings", "tree", "per_turn", "archive"} <= set(detail)


def test_snapshot_matches(tmp_path: Path) -> None:
    """Regenerate with OCTEL_UPDATE_GOLDEN=1 when an answer changes on purpose."""
    text = json.dumps(_openapi(tmp_path), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("OCTEL_UPDATE_GOLDEN") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.exists(), f"no {SNAPSHOT}; run once with OCTEL_UPDATE_GOLDEN=1 and review it"
    assert json.loads(SNAPSHOT.read_text(encoding="utf-8")) == json.loads(text), (
        f"the API changed: review and regenerate {SNAPSHOT} with OCTEL_UPDATE_GOLDEN=1"
    )
