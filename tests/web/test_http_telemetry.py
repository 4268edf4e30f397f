"""FastAPI's own per-request OpenTelemetry is left on for each kind whose provider is set when
the app is built, and off for a kind with none (it would have nowhere to report, and asking
again at every request cost a tenth of a cycle write's event-loop time)."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from web.http_telemetry import telemetry_config


def test_no_provider_turns_each_kind_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    assert telemetry_config() == {"telemetry": {"tracing": False, "metrics": False, "logs": False}}


def test_a_configured_tracer_provider_keeps_request_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    provider = TracerProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    assert telemetry_config() == {"telemetry": {"tracing": True, "metrics": False, "logs": False}}


def test_fastapi_configuring_the_providers_itself_is_left_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    assert telemetry_config() == {}
