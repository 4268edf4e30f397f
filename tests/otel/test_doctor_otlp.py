"""`octel doctor` checks the OTLP endpoint when trace export is set up: an empty export request
to a real local receiver, and a clear sentence when it cannot be reached, wants credentials or
is not a trace receiver."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import OTLPReceiver
from typer.testing import CliRunner

from cli import app

OTEL_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OCTEL_OTEL_EXPORT",
)


@pytest.fixture
def rx(monkeypatch: pytest.MonkeyPatch) -> Iterator[OTLPReceiver]:
    for v in OTEL_VARS:
        monkeypatch.delenv(v, raising=False)
    with OTLPReceiver() as r:
        yield r


def doctor(tmp_path: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "doctor", "--json"])
    return r.exit_code, {c["name"]: c for c in json.loads(r.stdout)["checks"]}


def test_no_export_set_up_no_check(tmp_path: Path, rx: OTLPReceiver) -> None:
    _, checks = doctor(tmp_path)
    assert "otlp endpoint" not in checks and rx.requests == 0


def test_a_receiver_that_takes_traces_is_ok(
    tmp_path: Path, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret-0123456789")
    _, checks = doctor(tmp_path)
    got = checks["otlp endpoint"]
    assert got["status"] == "ok" and f"{rx.endpoint}/v1/traces" in got["detail"]
    assert rx.requests == 1 and rx.spans == [], "an empty export: nothing stored"
    assert rx.headers[0]["authorization"] == "Bearer s3cret-0123456789"
    assert rx.headers[0]["content-type"] == "application/x-protobuf"


def test_export_on_with_nothing_listening_fails_with_the_fix(
    tmp_path: Path, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("OCTEL_OTEL_EXPORT", "true")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    code, checks = doctor(tmp_path)
    got = checks["otlp endpoint"]
    assert code == 1 and got["status"] == "fail"
    assert got["detail"].startswith(f"no answer from {url}/v1/traces")
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in got["fix"]


@pytest.mark.parametrize(
    ("code", "words", "fix"),
    [
        (401, "wants credentials", "OTEL_EXPORTER_OTLP_HEADERS"),
        (403, "wants credentials", "HEADERS"),
        (503, "answered 503", "up"),
    ],
)
def test_a_refusal_names_what_to_fix(
    tmp_path: Path, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch, code: int, words: str, fix: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint)
    rx.fail, rx.fail_code = 1, code
    _, checks = doctor(tmp_path)
    got = checks["otlp endpoint"]
    assert got["status"] == "fail" and words in got["detail"] and fix in got["fix"]


def test_the_wrong_path_is_named(tmp_path: Path, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    # a whole URL in the base variable: octel appends /v1/traces and finds no receiver there
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint + "/v1/traces")
    _, checks = doctor(tmp_path)
    got = checks["otlp endpoint"]
    assert (
        got["status"] == "fail" and "404" in got["detail"] and "no OTLP/HTTP trace receiver" in got["detail"]
    )
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in got["fix"]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rx.endpoint + "/v1/traces")
    _, checks = doctor(tmp_path)
    assert checks["otlp endpoint"]["status"] == "ok"
