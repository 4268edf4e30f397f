"""The OpenAPI document describes every answer of the API, and is checked in (docs/openapi.json).

The archive document (`/api/sessions/archived/detail`) is described by schemas/archive-v2.json.
"""

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


def test_every_json_route_declares_its_answer(tmp_path: Path) -> None:
    doc = _openapi(tmp_path)
    ops = {
        (m, p): op
        for p, by_method in doc["paths"].items()
        if p.startswith("/api/")
        for m, op in by_method.items()
    }
    assert {
        ("get", "/api/sessions/{session_id}"),
        ("get", "/api/costs"),
        ("post", "/api/v1/heartbeat"),
    } <= set(ops)
    for (method, path), op in ops.items():
        ok = next(v for k, v in op["responses"].items() if k.startswith("2"))
        schema = ok["content"]["application/json"]["schema"]
        assert "$ref" in schema or path == "/api/sessions/archived/detail", f"{method} {path}: {schema}"
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
