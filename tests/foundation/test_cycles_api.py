"""`GET /api/cycles` (filters, newest first, cursor paging) and the 24-hour summary."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from telemetry.timeutil import utcnow
from web.app import create_app


@pytest.fixture
def client(settings: Settings, auth: dict[str, str]) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        now = utcnow()
        for i in range(30):
            driver = ["review", "impl", "conflict"][i % 3]
            start = now - timedelta(hours=i)  # every hour back, some past the 24-hour window
            c.post(
                "/api/v1/cycles/begin",
                json={"cycle_id": f"c{i:02d}", "driver": driver, "started_at": start.isoformat()},
                headers=auth,
            )
            if i % 4:
                c.post(
                    "/api/v1/cycles/finish",
                    json={
                        "cycle_id": f"c{i:02d}",
                        "driver": driver,
                        "terminal_state": "done" if i % 2 else "failed",
                        "worker_outcome": "merged" if i % 2 else "timeout",
                        "ended_at": (start + timedelta(minutes=5)).isoformat(),
                    },
                    headers=auth,
                )
        yield c


def test_newest_first_with_filters(client: TestClient) -> None:
    items = client.get("/api/cycles", params={"limit": 500}).json()["items"]
    assert [c["cycle_id"] for c in items] == [f"c{i:02d}" for i in range(30)]
    review = client.get("/api/cycles", params={"driver": "review", "limit": 500}).json()["items"]
    assert {c["driver"] for c in review} == {"review"} and len(review) == 10
    failed = client.get("/api/cycles", params={"terminal_state": "failed", "limit": 500}).json()["items"]
    assert all(c["terminal_state"] == "failed" for c in failed) and failed
    recent = client.get("/api/cycles", params={"since": "330m", "limit": 500}).json()["items"]
    assert [c["cycle_id"] for c in recent] == [f"c{i:02d}" for i in range(6)]
    flying = client.get("/api/cycles", params={"in_flight": "true", "limit": 500}).json()["items"]
    assert {c["cycle_id"] for c in flying} == {f"c{i:02d}" for i in range(0, 30, 4)}
    assert all(c["in_flight"] and c["elapsed_s"] is not None for c in flying)


@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(1, 31))
def test_paging_visits_every_cycle_once_in_order(client: TestClient, limit: int) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/cycles", params=params).json()
        seen += [c["cycle_id"] for c in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"c{i:02d}" for i in range(30)]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"cursor": "garbage!"}, "query.cursor"),
        ({"since": "yesterday"}, "query.since"),
        ({"limit": 0}, "query.limit"),
    ],
)
def test_bad_query_gets_the_error_shape(client: TestClient, params: dict[str, object], field: str) -> None:
    r = client.get("/api/cycles", params=params)
    assert r.status_code == 422
    assert r.json()["error"]["fields"][0]["field"] == field


def test_summary_counts_the_last_24_hours(client: TestClient) -> None:
    s = client.get("/api/cycles/summary").json()
    by = {d["driver"]: d for d in s["drivers"]}
    in_window = range(24)
    assert sum(d["total"] for d in by.values()) == len(in_window)
    impl = by["impl"]  # i = 1, 4, 7, …, 22
    assert impl["in_flight"] == sum(1 for i in in_window if i % 3 == 1 and i % 4 == 0)
    assert impl["by_state"]["done"]["merged"] == sum(1 for i in in_window if i % 3 == 1 and i % 4 and i % 2)
