"""The console login: guesses throttled and logged, short tokens refused, cookies that lapse
and that logging out revokes, and no cookie-authenticated form post from another site."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from liveserver import OctelProcess

from telemetry.settings import Settings
from web.app import WeakTokenError, create_app, weak_token_check
from web.login_cookie import Logins, LoginThrottle

TOKEN = "test-token-0123456789"
READ = "read-token-abcdefghijkl"


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(data_dir=tmp_path / "data", ingest_token=TOKEN, _env_file=None, **kw)  # type: ignore[call-arg]


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(tmp_path, read_token=READ))) as c:
        yield c


def _log_in(client: TestClient) -> str:
    ok = client.post("/login", data={"token": READ}, follow_redirects=False)
    assert ok.status_code == 303, ok.text
    return ok.cookies["octel_console"]


def test_wrong_tokens_are_logged_then_throttled_with_retry_after(
    guarded: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "octel"):
        statuses = [guarded.post("/login", data={"token": f"guess-{i}"}).status_code for i in range(12)]
    assert statuses[:5] == [401] * 5  # a few typos are free
    assert 429 in statuses
    refused = guarded.post("/login", data={"token": READ})  # even the right token waits its turn
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "octel_console" not in refused.headers.get("set-cookie", "")
    failures = [r.getMessage() for r in caplog.records if "wrong read token" in r.getMessage()]
    assert failures and "testclient" in failures[0] and READ not in "".join(failures)


@given(st.integers(1, 40))
def test_the_wait_doubles_after_the_free_tries_and_is_capped(n: int) -> None:
    throttle, now = LoginThrottle(free=5, cap_s=300), 1000.0
    for _ in range(n):
        throttle.failed("a", now)
    wait = throttle.wait("a", now)
    assert wait == (0 if n <= 5 else min(300, 2 ** (n - 6)))
    assert throttle.wait("b", now) == 0  # per address
    assert throttle.wait("a", now + 301) == 0
    throttle.succeeded("a")
    assert throttle.wait("a", now) == 0


def test_logging_out_revokes_the_cookie_on_the_server(guarded: TestClient) -> None:
    cookie = _log_in(guarded)
    assert guarded.get("/api/cycles").status_code == 200
    out = guarded.post("/logout", follow_redirects=False)
    assert out.status_code == 303
    guarded.cookies.clear()
    guarded.cookies.set("octel_console", cookie)  # a copy kept by whoever saw it
    assert guarded.get("/api/cycles").status_code == 401


@given(st.floats(0, 10**9), st.floats(1, 10**6), st.floats(0, 2 * 10**6))
def test_a_cookie_lapses_after_its_age(issued: float, age: float, later: float) -> None:
    logins = Logins(READ, age)
    cookie = logins.issue(issued)
    assert logins.valid(cookie, issued + later) == (int(issued) + age > issued + later)
    assert not Logins("another-token-0123456", age).valid(cookie, issued)  # a new token logs all out
    assert not logins.valid(cookie.replace(".", ".x", 1), issued)


def test_the_cookie_carries_an_expiry(guarded: TestClient) -> None:
    ok = guarded.post("/login", data={"token": READ}, follow_redirects=False)
    assert "Max-Age=43200" in ok.headers["set-cookie"]


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}],
)
def test_a_cross_site_post_with_the_cookie_is_refused(guarded: TestClient, headers: dict[str, str]) -> None:
    _log_in(guarded)
    r = guarded.post("/logout", headers=headers, follow_redirects=False)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert guarded.get("/api/cycles").status_code == 200  # still logged in
    login = guarded.post("/login", data={"token": READ}, headers=headers, follow_redirects=False)
    assert login.status_code == 403  # nor may another site log this browser in
    same = guarded.post("/logout", headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert same.status_code == 303


def test_short_tokens_are_refused_beyond_loopback_and_warned_about_on_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(WeakTokenError, match="OCTEL_READ_TOKEN"):
        weak_token_check(_settings(tmp_path, host="0.0.0.0", read_token="x"), TOKEN)
    with pytest.raises(WeakTokenError, match="OCTEL_INGEST_TOKEN"):
        weak_token_check(_settings(tmp_path, host="10.1.2.3"), "y")
    assert weak_token_check(_settings(tmp_path, host="0.0.0.0", read_token=READ), TOKEN) is None
    with (
        caplog.at_level(logging.WARNING, "octel"),
        TestClient(create_app(_settings(tmp_path, read_token="x"))),
    ):
        pass
    assert any("OCTEL_READ_TOKEN is shorter than 16" in r.getMessage() for r in caplog.records)


def test_octel_serve_refuses_a_short_token_on_every_address(tmp_path: Path) -> None:
    server = OctelProcess(tmp_path / "data", token="short", extra_env={"OCTEL_HOST": "0.0.0.0"})
    with pytest.raises(RuntimeError, match="exited with 2"):
        server.start()
    server.stop()
    assert "OCTEL_INGEST_TOKEN is shorter than 16" in server.log_path.read_text()
