"""The published schema and the server agree on every number an ingest body carries: what the
schema's JSON Schema holds valid is stored (`484.0` and `1e3` are integers to JSON Schema, so
they are taken as such), what it refuses is a 422 naming the field (`484.5`, `"484"`, `true`,
one past a bound). Checked value by value with the schema's own validator, so a schema looser
or stricter than the server fails here as well as in the fuzz."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from telemetry.settings import Settings
from web.app import create_app

INT32_MAX = 2**31 - 1
NUMBERS: list[Any] = [484, 484.0, 1e3, 484.5, "484", True, None, 0, -1, 1.0]
NUMBERS += [INT32_MAX, INT32_MAX + 1.0, 2.0**31]
# (route, a body the server takes, the integer field tried with each number)
BODIES = [
    ("/api/v1/heartbeat", {"driver": "d", "host": "h"}, "pid"),
    ("/api/v1/cycles/begin", {"cycle_id": "c-begin", "driver": "d"}, "candidates_count"),
    ("/api/v1/agent-runs", {"agent": "a", "result": '{"type": "result", "result": "ok"}'}, "exit_code"),
]


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    spec: dict[str, Any] = create_app(Settings(_env_file=None)).openapi()  # type: ignore[call-arg]
    return spec


def _body_schema(doc: dict[str, Any], route: str) -> Draft202012Validator:
    ref = doc["paths"][route]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**ref, "components": doc["components"]})


@pytest.mark.parametrize(("route", "body", "field"), BODIES)
def test_each_number_is_taken_exactly_when_the_schema_holds_it_valid(
    route: str,
    body: dict[str, Any],
    field: str,
    settings: Settings,
    auth: dict[str, str],
    doc: dict[str, Any],
) -> None:
    valid = _body_schema(doc, route)
    with TestClient(create_app(settings)) as client:
        for i, n in enumerate(NUMBERS):
            sent = {**body, field: n}
            if "cycle_id" in sent:
                sent["cycle_id"] = f"c-{i}"
            r = client.post(route, json=sent, headers=auth)
            if valid.is_valid(sent):
                assert 200 <= r.status_code < 300, (n, r.status_code, r.text)
            else:
                assert r.status_code == 422, (n, r.status_code, r.text)
                assert field in r.text, (n, r.text)
    assert valid.is_valid({**body, field: 484.0})  # what JSON Schema says: an integer
