"""The door: tokens before bodies, body limits, allowed hosts, security headers, read token."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from liveserver import live_octel
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from web.app import create_app, exposure_warning

TOKEN = "test-token-0123456789"
READ = "read-token-abcdefghijkl"


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(data_dir=tmp_path / "data", ingest_token=TOKEN, _env_file=None, **kw)  # type: ignore[call-arg]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = _settings(tmp_path)
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _asgi(client: TestClient, method: str, path: str, headers: dict[str, str]) -> tuple[int, int]:
    """(status, how often the app asked for body bytes) of one request, at the ASGI level."""
    reads = 0
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"{" * 1024, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "localhost", **headers}.items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8765),
    }
    asyncio.run(client.app(scope, receive, send))  # type: ignore[arg-type]
    return status, reads


@pytest.mark.parametrize("auth", [None, "Bearer wrong-token-0123456789", "Basic Zm9vOmJhcg=="])
def test_a_write_without_the_token_is_refused_before_its_body_is_read(
    client: TestClient, auth: str | None
) -> None:
    headers = {"content-type": "application/json", "content-length": str(150 * 2**20)}
    if auth:
        headers["authorization"] = auth
    assert _asgi(client, "POST", "/api/v1/cycles/begin", headers) == (401, 0)


def test_a_declared_body_over_the_limit_is_413_before_it_is_read(client: TestClient) -> None:
    headers = {
        "content-type": "application/json",
        "content-length": str(2 * 2**20),
        "authorization": f"Bearer {TOKEN}",
    }
    assert _asgi(client, "POST", "/api/v1/heartbeat", headers) == (413, 0)
    # agent runs carry a whole transcript: their limit is larger
    status, reads = _asgi(client, "POST", "/api/v1/agent-runs", {**headers, "content-length": "70000000"})
    assert (status, reads) == (413, 0)


def test_malformed_json_without_a_token_is_401(client: TestClient) -> None:
    r = client.post(
        "/api/v1/cycles/begin", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["code"] == "unauthorized"


def _answer(s: socket.socket) -> bytes:
    """The whole answer: headers and body may come in separate segments."""
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < 20:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("path", ["/api/v1/heartbeat", "/api/v1/cycles/begin"])
def test_a_chunked_body_over_the_limit_is_413_while_it_streams(tmp_path: Path, path: str) -> None:
    """Over a real socket: no Content-Length, chunks past the 1 MiB limit; the server answers
    413 while the client is still sending, and stays up (cycle writes are read past the router,
    by `web.cycle_fast_path`)."""
    with live_octel(tmp_path / "data", token=TOKEN) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
                + f"Authorization: Bearer {TOKEN}\r\n".encode()
                + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"x" * 65536
            sent = 0
            try:
                for _ in range(64):  # up to 4 MiB; the server stops reading after 1 MiB
                    s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)
            except OSError:  # the server closed the connection after answering
                pass
            answer = _answer(s)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"payload_too_large" in answer
        assert httpx.get(f"{base}/api/health").status_code == 200


def test_bodies_under_the_limit_pass(client: TestClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = client.post("/api/v1/heartbeat", json={"driver": "d", "host": "h"}, headers=auth)
    assert r.status_code == 200, r.text


def test_other_hosts_are_refused(client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OCTEL_ALLOWED_HOSTS", raising=False)
    s = _settings(tmp_path, host="10.1.2.3", allowed_hosts="octel.example.org")
    with TestClient(create_app(s), base_url="http://localhost") as c:
        for host in ("localhost", "127.0.0.1", "[::1]:8765", "10.1.2.3:8765", "octel.example.org"):
            assert c.get("/api/health", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "testserver", "127.0.0.1.evil.example"):  # DNS rebinding
            r = c.get("/api/health", headers={"host": host})
            assert r.status_code == 400, host
            assert r.json()["error"]["fields"][0]["field"] == "header.host"


@pytest.mark.parametrize(
    "path", ["/api/health", "/api/cycles", "/metrics", "/", "/openapi.json", "/api/nope", "/static/util.js"]
)
def test_every_response_carries_the_security_headers(client: TestClient, path: str) -> None:
    r = client.get(path)
    for name in ("x-content-type-options", "x-frame-options", "referrer-policy", "content-security-policy"):
        assert name in r.headers, (path, name)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_no_page_loads_anything_from_another_origin(client: TestClient) -> None:
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200
    for path in ("/", "/login"):
        assert "http" not in client.get(path).text.replace("http-equiv", ""), path


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(tmp_path, read_token=READ))) as c:
        yield c


@pytest.mark.parametrize("path", ["/api/health", "/api/cycles", "/api/sessions", "/api/costs", "/metrics"])
def test_with_a_read_token_reads_need_it(guarded: TestClient, path: str) -> None:
    r = guarded.get(path)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert guarded.get(path, headers={"Authorization": "Bearer not-it"}).status_code == 401
    assert guarded.get(path, headers={"Authorization": f"Bearer {READ}"}).status_code == 200
    assert guarded.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_console_logs_in_with_a_form_and_a_cookie(guarded: TestClient) -> None:
    r = guarded.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    form = guarded.get("/login")
    assert form.status_code == 200 and 'name="token"' in form.text
    assert "form-action 'self'" in form.headers["content-security-policy"]
    bad = guarded.post("/login", data={"token": "wrong"}, follow_redirects=False)
    assert bad.status_code == 401 and "octel_console" not in bad.headers.get("set-cookie", "")
    ok = guarded.post("/login", data={"token": READ}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/"
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and READ not in cookie
    assert guarded.get("/").status_code == 200  # the client keeps the cookie
    assert guarded.get("/api/cycles").status_code == 200  # and the console's own requests pass
    # the forged cookie alone: beside the real one, which the client would send too, the
    # server may read either
    guarded.cookies.clear()
    guarded.cookies.set("octel_console", "forged")
    assert guarded.get("/api/cycles").status_code == 401


def test_writes_still_need_the_ingest_token_not_the_read_token(guarded: TestClient) -> None:
    body = {"driver": "d", "host": "h"}
    assert (
        guarded.post("/api/v1/heartbeat", json=body, headers={"Authorization": f"Bearer {READ}"}).status_code
        == 401
    )
    assert (
        guarded.post("/api/v1/heartbeat", json=body, headers={"Authorization": f"Bearer {TOKEN}"}).status_code
        == 200
    )


def test_serving_beyond_loopback_without_a_read_token_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert exposure_warning(_settings(tmp_path)) is None
    assert exposure_warning(_settings(tmp_path, host="0.0.0.0", read_token=READ)) is None
    warning = exposure_warning(_settings(tmp_path, host="0.0.0.0"))
    assert warning is not None and "OCTEL_READ_TOKEN" in warning
    assert warning.endswith(".") and "\n" not in warning  # one sentence
    with (
        caplog.at_level(logging.WARNING, "octel"),
        TestClient(create_app(_settings(tmp_path, host="0.0.0.0"))),
    ):
        pass
    assert [r.getMessage() for r in caplog.records].count(warning) == 1


def test_a_large_refused_write_is_answered_at_once(tmp_path: Path) -> None:
    """A real server, a 150 MB POST without a token: the 401 comes after the headers, while
    the client has sent almost none of the body."""
    with live_octel(tmp_path / "data", token=TOKEN) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as s:
            s.sendall(
                b"POST /api/v1/agent-runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 157286400\r\n\r\n" + b"{" * 65536
            )
            answer = s.recv(65536)  # a server that waited for the body would time out here
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_serving_on_every_address_answers_the_machines_own_name(tmp_path: Path) -> None:
    assert socket.gethostname().lower() in _settings(tmp_path, host="0.0.0.0").hosts
    assert (
        socket.gethostname().lower() not in _settings(tmp_path).hosts or socket.gethostname() == "localhost"
    )


@pytest.mark.parametrize("bad", ["a*b.example", "*example.org", "x.*"])
def test_malformed_host_patterns_are_refused_at_start(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="not a host name"):
        _settings(tmp_path, allowed_hosts=f"ok.example,{bad}")
