"""Every operation of the served OpenAPI, fuzzed by schemathesis against a live `octel serve`
with every check schemathesis has (server errors, status codes, content types, response
schemas and headers, negative and positive data, auth): no failure of any kind."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pgserver
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from liveserver import live_octel
from schemathesis.checks import CHECKS, load_all_checks

from telemetry.settings import Settings
from web.app import create_app

TOKEN = "fuzz-token-0123456789abcdef"
OPENAPI = create_app(Settings(_env_file=None)).openapi()  # type: ignore[call-arg]
# Valid by the schema yet refused is allowed only as what the schema documents for it: an
# unknown id (404), a contradiction of stored data (409). A 422 for data the schema holds valid
# is a disagreement, and fails, except on the operations taking a value whose validity no JSON
# Schema states: a window that is `24h` or an ISO time, an opaque cursor; on the ingest routes a
# time whose UTC form must lie in the years 1 to 9999, a finish that may not end before it
# began, a `meta` object at most 32 levels deep, a Claude CLI result (a JSON text).
_OPAQUE = {"since", "until", "cursor", "before"}
_LOOSE = [
    *sorted(
        path
        for path, ops in OPENAPI["paths"].items()
        for op in ops.values()
        if {p["name"] for p in op.get("parameters", [])} & _OPAQUE
    ),
    "/api/v1/agent-runs",
    "/api/v1/cycles/begin",
    "/api/v1/cycles/finish",
    "/api/v1/heartbeat",
]
_STRICT = ["2xx", "404", "409"]
CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {"positive_data_acceptance": {"expected-statuses": _STRICT}},
        "operations": [
            {
                "include-path-regex": "^(" + "|".join(re.escape(p) for p in _LOOSE) + ")$",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*_STRICT, "422"]}},
            }
        ],
    }
)
schema = schemathesis.openapi.from_dict(OPENAPI, config=CONFIG)
load_all_checks()
ALL_CHECKS = [c for c in CHECKS.get_all() if callable(c) and not isinstance(c, type)]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def live_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server on each store: PostgreSQL refuses what SQLite lets through (NUL, int4)."""
    url = (
        pgserver.create_database(request.getfixturevalue("pg_server"))
        if request.param == "postgres"
        else None
    )
    data: Path = tmp_path_factory.mktemp("fuzz") / "data"
    with live_octel(data, url, token=TOKEN) as base:
        assert httpx.get(f"{base}/openapi.json").json() == OPENAPI  # the served schema is the one fuzzed
        yield base


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_passes_every_check(case: schemathesis.Case, live_base: str) -> None:
    case.call_and_validate(
        base_url=live_base, headers={"Authorization": f"Bearer {TOKEN}"}, checks=ALL_CHECKS
    )
