"""A real server refuses what a loose Host parser would have let through (400, JSON envelope)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from liveserver import live_octel


def _raw(base: str, request: bytes) -> tuple[int, bytes]:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer.partition(b"\r\n\r\n")[2]


def test_loose_hosts_duplicates_and_absolute_targets_are_refused(tmp_path: Path) -> None:
    with live_octel(tmp_path / "data") as base:
        assert (
            _raw(base, b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")[0] == 200
        )
        for request in (
            b"GET /api/health HTTP/1.1\r\nHost: [::1]evil.example\r\n",
            b"GET /api/health HTTP/1.1\r\nHost: localhost:8765@evil.example\r\n",
            b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n",
            b"GET http://evil.example/api/health HTTP/1.1\r\nHost: localhost\r\n",
        ):
            status, body = _raw(base, request + b"Connection: close\r\n\r\n")
            assert status == 400, request
            error = json.loads(body)["error"]
            assert error["code"] == "invalid_host" and error["fields"][0]["field"] == "header.host", request
