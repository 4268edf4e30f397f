"""The ingest routes against what a broken or hostile dispatcher sends: times far in the past
and future, counts at and past every bound, unicode, NUL, very long text, duplicate keys,
secrets anywhere. Never a 5xx; a refusal is a 4xx naming a body field; whatever is stored
passed the redactor (no planted secret survives in any stored string)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlmodel import select
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Cycle, Daemon
from web.app import create_app
from web.app_state import app_state

AUTH = {"Authorization": "Bearer test-token-0123456789"}
CONFIGURED = "acct-7731-0099-4412"
SECRETS = [
    "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "sk-ant-api03-FAKEfakeFAKEfakeFAKEfake-00",
    "AKIAFAKEFAKEFAKEFAKE",
    CONFIGURED,
]

_secretish = st.one_of(st.sampled_from(SECRETS), st.builds(lambda s: f"at {s} end", st.sampled_from(SECRETS)))
_text = st.one_of(
    st.sampled_from(["c1", "c2", "review", "done", "failed", "h", " c1 ", "", " ", "é🦀", "a\x00b"]),
    _secretish,
    st.text(max_size=10),
    st.integers(min_value=99, max_value=301).map(lambda n: "x" * n),
)
_count = st.one_of(
    st.sampled_from([0, 1, -1, 2**31 - 1, 2**31, 2**63, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False) | st.sampled_from(["5", True, None]),
)
_time = st.one_of(
    st.sampled_from(
        [
            "0001-01-01T00:00:00Z",
            "0001-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59-14:00",
            "1970-01-01",
            "2026-11-30T12:00:00",
            "10000-01-01T00:00:00",
            "2026-02-30T00:00:00",
            "",
            "now",
            "1e9",
        ]
    ),
    st.sampled_from([0, -1, 1e18, None]),
)
_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | _text,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
    max_leaves=8,
)
_FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "/api/v1/cycles/begin": {
        "cycle_id": _text,
        "driver": _text,
        "started_at": _time,
        "host": _text,
        "pid": _count,
        "candidates_count": _count,
        "claims_count": _count,
        "swept_count": _count,
        "session_id": _text,
        "meta": _json,
    },
    "/api/v1/cycles/finish": {
        "cycle_id": _text,
        "driver": _text,
        "terminal_state": _text,
        "worker_outcome": _text,
        "error_kind": _text,
        "started_at": _time,
        "ended_at": _time,
        "session_id": _text,
        "processed_count": _count,
        "escalated_count": _count,
        "worker_wallclock_seconds": _count,
        "meta": _json,
    },
    "/api/v1/heartbeat": {
        "driver": _text,
        "host": _text,
        "pid": _count,
        "in_flight_cycle_id": _text,
        "at": _time,
    },
    "/api/v1/agent-runs": {
        "task": _text,
        "agent": _text,
        "exit_code": _count,
        "result": _json
        | st.builds(
            json.dumps,
            st.dictionaries(
                st.sampled_from(
                    [
                        "type",
                        "subtype",
                        "result",
                        "session_id",
                        "usage",
                        "total_cost_usd",
                        "num_turns",
                        "modelUsage",
                        "uuid",
                    ]
                ),
                _json,
            ),
        ),
    },
}


_ids = st.sampled_from(["c1", "c2", "c3"]) | _secretish
_VALID: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "/api/v1/cycles/begin": {"cycle_id": _ids, "driver": st.sampled_from(["review", "impl"])},
    "/api/v1/cycles/finish": {
        "cycle_id": _ids,
        "driver": st.sampled_from(["review", "impl"]),
        "terminal_state": _ids,
    },
    "/api/v1/heartbeat": {"driver": st.sampled_from(["review", "impl"]) | _secretish, "host": _ids},
    "/api/v1/agent-runs": {"result": st.builds(lambda t: {"type": "result", "result": t}, _text)},
}


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, bytes]:
    """A request that is valid but for the few fields drawn from anything."""
    path = draw(st.sampled_from(sorted(_FIELDS)))
    fields = _FIELDS[path]
    valid = {n: draw(v) for n, v in _VALID[path].items()}
    names = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=3))
    pairs = [*valid.items(), *[(n, draw(fields[n])) for n in names]]
    if draw(st.booleans()):  # a key sent twice: the JSON reader keeps the last
        pairs.append((pairs[0][0], draw(fields[pairs[0][0]])))
    body = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
    return path, body.encode()


@pytest.fixture
def octel(settings: Settings) -> Iterator[TestClient]:
    s = settings.model_copy(update={"redact_values": CONFIGURED})
    migrate_by_copy(s.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(s), raise_server_exceptions=False) as c:
        yield c


def _stored(client: TestClient) -> str:
    with session_scope(app_state(client.app).engine, write=False) as db:
        rows = [
            *db.exec(select(Cycle)).all(),
            *db.exec(select(Daemon)).all(),
            *db.exec(select(AgentRun)).all(),
        ]
        return json.dumps([r.model_dump(mode="json") for r in rows])


@given(st.lists(_requests(), min_size=1, max_size=4))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_ingest_request_is_a_5xx_and_nothing_stored_holds_a_secret(
    octel: TestClient, requests: list[tuple[str, bytes]]
) -> None:
    for path, body in requests:
        r = octel.post(path, content=body, headers={**AUTH, "Content-Type": "application/json"})
        assert r.status_code < 500, (path, body, r.text)
        event(f"{path} {r.status_code}")
        if r.status_code in (400, 422):
            fields = [f["field"] for f in r.json()["error"]["fields"]]
            assert fields and all(f.startswith("body") for f in fields), r.text
    stored = _stored(octel)
    assert not [s for s in SECRETS if s in stored], stored
