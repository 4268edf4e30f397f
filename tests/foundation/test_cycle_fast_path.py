"""Cycle begins and finishes answered past the router (`web.cycle_fast_path`) say exactly what
the route says: the same status and, for a refusal, the same envelope naming the same field.

The route is reached with `Content-Type: application/octel+json`, which FastAPI reads as JSON
and the fast path leaves to it; two apps on two stores get the same requests in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from store_templates import migrate_by_copy

from telemetry.services.ingest.ingest_inputs import CycleBegin
from telemetry.settings import Settings
from web.app import create_app
from web.cycle_fast_path import validated

TOKEN = "test-token-0123456789"
SECRET = "acct-7731-0099-4412"
FAST = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
ROUTE = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/octel+json"}
BEGIN, FINISH = "/api/v1/cycles/begin", "/api/v1/cycles/finish"

_text = st.sampled_from(["c1", "c2", " c1 ", "", " ", "é🦀", "a\x00b", "x" * 201, f"at {SECRET} end"])
_value = st.one_of(
    _text,
    st.sampled_from([0, 1, -1, 2**31, 2**63, 10**30, 1.5, True, None, "5", [], {}]),
    st.sampled_from(["2026-11-30T12:00:00Z", "0001-01-01T00:00:00+14:00", "2026-02-30", "now", 1e18]),
    st.dictionaries(_text, st.integers() | _text, max_size=2),
)
_NAMES = {
    BEGIN: ["cycle_id", "driver", "started_at", "host", "pid", "claims_count", "session_id", "meta", "bogus"],
    FINISH: [
        "cycle_id",
        "driver",
        "terminal_state",
        "worker_outcome",
        "error_kind",
        "started_at",
        "ended_at",
        "session_id",
        "processed_count",
        "worker_wallclock_seconds",
        "meta",
        "bogus",
    ],
}
_VALID = {
    BEGIN: {"cycle_id": "c1", "driver": "review"},
    FINISH: {"cycle_id": "c1", "driver": "review", "terminal_state": "done"},
}
_RAW = [
    b"",
    b"{",
    b"[]",
    b'"c1"',
    b"null",
    b'{"cycle_id": NaN}',
    b'{"cycle_id": "\\ud800"}',
    b"\xef\xbb\xbf{}",
    b'{"cycle_id": "c1", "driver": "review", "terminal_state": "done", "pid": 1e400}',
    b'{"cycle_id": "c1", "driver": "review", "terminal_state": "done", "meta": {"n": 18446744073709551616}}',
]


@st.composite
def _request(draw: st.DrawFn) -> tuple[str, bytes]:
    path = draw(st.sampled_from([BEGIN, FINISH]))
    if draw(st.integers(0, 9)) == 0:
        return path, draw(st.sampled_from(_RAW))
    fields: dict[str, Any] = dict(_VALID[path])
    for name in draw(st.lists(st.sampled_from(_NAMES[path]), unique=True, max_size=3)):
        fields[name] = draw(_value)
    return path, json.dumps(fields).encode()


def _app(tmp: Path, name: str) -> TestClient:
    # one redaction key for both: a secret's placeholder carries the key's HMAC of it
    key = tmp / "redact.key"
    s = Settings(
        data_dir=tmp / name, ingest_token=TOKEN, redact_values=SECRET, redact_key_file=key, _env_file=None
    )
    migrate_by_copy(s.db_url)  # at head already: the app's upgrade is the one-query check
    return TestClient(create_app(s), raise_server_exceptions=False)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    with _app(tmp_path, "fast") as fast, _app(tmp_path, "route") as route:
        yield fast, route


_MOMENTS = ("started_at", "ended_at", "duration_s", "elapsed_s")


def _comparable(answer: Any) -> Any:
    """The answer less the moments of "now" each app took for itself."""
    if isinstance(answer, dict) and isinstance(answer.get("cycle"), dict):
        return {**answer, "cycle": {k: v for k, v in answer["cycle"].items() if k not in _MOMENTS}}
    return answer


def test_the_route_reads_the_reference_content_type_as_json(pair: tuple[TestClient, TestClient]) -> None:
    _, route = pair
    r = route.post(BEGIN, content=b'{"cycle_id": "c9", "driver": "review"}', headers=ROUTE)
    assert r.status_code == 201, r.text


@given(st.lists(_request(), min_size=1, max_size=5))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_fast_path_answers_as_the_route_does(
    pair: tuple[TestClient, TestClient], requests: list[tuple[str, bytes]]
) -> None:
    fast, route = pair
    for path, body in requests:
        a = fast.post(path, content=body, headers=FAST)
        b = route.post(path, content=body, headers=ROUTE)
        event(f"{path} {a.status_code}")
        assert a.status_code == b.status_code, (path, body, a.text, b.text)
        assert a.headers["content-type"] == b.headers["content-type"]
        assert _comparable(a.json()) == _comparable(b.json()), (path, body)
        assert SECRET not in a.text


def test_the_fast_path_takes_a_valid_body_and_leaves_the_rest() -> None:
    assert isinstance(validated(CycleBegin, b'{"cycle_id": "c1", "driver": "review"}'), CycleBegin)
    for body in (b"", b"[]", b'{"cycle_id": "c1"}', b'{"cycle_id": NaN, "driver": "r"}'):
        assert validated(CycleBegin, body) is None


def test_fast_writes_are_counted_under_their_route(pair: tuple[TestClient, TestClient]) -> None:
    fast, _ = pair
    assert fast.post(BEGIN, json={"cycle_id": "m1", "driver": "review"}, headers=FAST).status_code == 201
    assert (
        fast.post(
            FINISH, json={"cycle_id": "m1", "driver": "review", "terminal_state": "done"}, headers=FAST
        ).status_code
        == 200
    )
    text = fast.get("/metrics").text
    assert 'octel_http_requests_total{method="POST",route="/api/v1/cycles/begin",status="201"} 1.0' in text
    assert 'octel_http_requests_total{method="POST",route="/api/v1/cycles/finish",status="200"} 1.0' in text


def test_fast_answers_carry_the_security_headers(pair: tuple[TestClient, TestClient]) -> None:
    fast, _ = pair
    r = fast.post(BEGIN, json={"cycle_id": "h1", "driver": "review"}, headers=FAST)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    assert json.loads(r.content)["cycle"]["orphaned"] is False
