"""Every read route of the API against the query values a careless script or a hostile client
sends (numbers past 64 bits, NaN, negative, blank, NUL, unicode, forged or cut cursors, times
past year 9999, odd ids): never a 5xx, and a refusal is a 4xx naming the parameter."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from console_seed import Store
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import select

from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveMessage
from web.app import create_app
from web.app_state import app_state

_numbers = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.sampled_from(
        [
            "9223372036854775807",
            "9223372036854775808",
            "2147483648",
            "NaN",
            "inf",
            "-inf",
            "1e3",
            "1.5",
            "",
            "0x10",
            "+5",
            " 5",
            "١٢",
            "1e308",
            "-0",
        ]
    ),
)
_times = st.sampled_from(
    [
        "24h",
        "0h",
        "-1h",
        "99999999999999999999h",
        "1e309h",
        "NaNh",
        "infh",
        "1970-01-01",
        "0001-01-01T00:00:00",
        "9999-12-31T23:59:59",
        "10000-01-01",
        "2026-13-45",
        "P1D",
        "7d",
        "9999999999d",
        "2026-01-01T00:00:00+99:00",
        "2026-01-01T00:00:00Z",
    ]
)
_cursors = st.one_of(
    st.binary(max_size=40).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    st.sampled_from(['["2026-01-01", 1]', "[1.5, 1]", '["x", "x"]', "null", "{}", "[1e999, 1]"]).map(
        lambda t: base64.urlsafe_b64encode(t.encode()).decode()
    ),
    st.text(max_size=20),
)
_texts = st.one_of(st.text(max_size=20), st.just("x" * 3000), st.sampled_from(["%", "_", "'", "\\", "é🦀"]))
_any = st.one_of(_numbers, _times, _cursors, _texts)
_KINDS = {
    "limit": _numbers,
    "offset": _numbers,
    "top": _numbers,
    "hours": _numbers,
    "since": _times,
    "until": _times,
    "at": _times,
    "cursor": _cursors,
}
_PARAMS = {
    "/api/costs": ["since", "until", "by", "top", "stack"],
    "/api/cycles": ["since", "until", "limit", "cursor", "in_flight", "driver", "terminal_state"],
    "/api/cycles/summary": ["hours"],
    "/api/live": ["limit", "state", "session_id", "q"],
    "/api/live/{live}/messages": ["offset", "limit"],
    "/api/live/{live}": [],
    "/api/sessions": [
        "since",
        "until",
        "limit",
        "cursor",
        "q",
        "agent",
        "model",
        "verdict",
        "label",
        "source",
        "root_only",
    ],
    "/api/sessions/archived": ["limit"],
    "/api/sessions/archived/detail": ["file"],
    "/api/sessions/{archived}": [],
    "/api/sessions/{archived}/messages": ["offset", "limit", "at"],
    "/api/v1/actions": ["since", "limit", "session_id"],
}


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, dict[str, str], str]:
    path = draw(st.sampled_from(sorted(_PARAMS)))
    names = draw(st.lists(st.sampled_from(_PARAMS[path]), unique=True)) if _PARAMS[path] else []
    # mostly a value of the parameter's own kind, sometimes anything
    params = {n: draw(st.one_of(_KINDS.get(n, _texts), _KINDS.get(n, _texts), _any)) for n in names}
    ident = draw(st.one_of(st.none(), st.none(), _texts.filter(lambda t: t not in ("", ".", ".."))))
    return path, params, ident or ""


@pytest.fixture
def seeded(store: Store) -> Iterator[tuple[TestClient, dict[str, str]]]:
    app = create_app(store.settings)
    with TestClient(app, raise_server_exceptions=False) as c:
        with session_scope(app_state(app).engine, write=False) as db:  # the seed's tree runs now
            live = db.exec(select(LiveMessage.session_id)).first()
        assert live is not None
        yield c, {"live": live, "archived": next(iter(store.seeded.scenarios.values()))}


@given(_requests())
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_query_value_or_id_is_a_5xx(
    seeded: tuple[TestClient, dict[str, str]], request: tuple[str, dict[str, str], str]
) -> None:
    client, ids = seeded
    path, params, ident = request
    # the seeded ids, or a drawn one (quoted, so it stays one path segment)
    url = path.format(**{k: quote(ident, safe="") if ident else v for k, v in ids.items()})
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
    r = client.get(f"{url}?{query}")
    assert r.status_code < 500, (url, query, r.text)
    if r.status_code == 422:
        fields = [f["field"] for f in r.json()["error"]["fields"]]
        assert fields and all(f.startswith(("query.", "path.")) for f in fields), r.text


def test_a_live_offset_past_64_bits_is_a_422_naming_it(seeded: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = seeded
    r = client.get(f"/api/live/{ids['live']}/messages?offset={2**64}")
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "query.offset"
    assert client.get(f"/api/live/{ids['live']}/messages?offset=0").status_code == 200


def test_a_one_value_parameter_given_twice_is_a_422_naming_it(
    seeded: tuple[TestClient, dict[str, str]],
) -> None:
    """FastAPI would keep the last value: `?limit=5&limit=500` answered a question the script
    did not ask. Every documented one-value query parameter of every read route is refused
    when given twice; one that takes several (`by` on the Costs page) is not."""
    client, ids = seeded
    for path, names in _PARAMS.items():
        url = path.format(**ids)
        for name in names:
            if (path, name) == ("/api/costs", "by"):  # takes several: checked below
                continue
            r = client.get(f"{url}?{name}=1&{name}=2")
            assert r.status_code == 422, (url, name, r.text)
            assert r.json()["error"]["fields"] == [
                {"field": f"query.{name}", "message": "given more than once; this parameter takes one value"}
            ]
    assert client.get("/api/costs?by=agent&by=model").status_code == 200


def test_an_unknown_parameter_of_a_read_route_is_a_422_naming_it(
    seeded: tuple[TestClient, dict[str, str]],
) -> None:
    """`/api/cycles?cycle_id=x` answered every cycle, as if the filter had matched: every read
    route refuses a parameter it does not take, as the ingest side refuses an unknown field."""
    client, ids = seeded
    for path in [*_PARAMS, "/api/health"]:
        url = path.format(**ids)
        r = client.get(f"{url}?cycle_id=x")
        assert r.status_code == 422, (url, r.text)
        [field] = r.json()["error"]["fields"]
        assert field["field"] == "query.cycle_id" and field["message"].startswith("not a parameter"), url
    assert "since" in client.get("/api/cycles?cycle_id=x").json()["error"]["message"]  # names what it takes
