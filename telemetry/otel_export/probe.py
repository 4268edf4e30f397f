"""Whether the OTLP endpoint takes trace exports: `octel doctor` sends it an empty export request.

An empty `ExportTraceServiceRequest` (zero bytes of protobuf) is a valid export of nothing: a
backend that takes traces answers it 2xx and stores nothing. The answer names what to fix: no
connection, credentials (401/403: the headers variable), the wrong path (404/405: the endpoint
variable, since octel appends `/v1/traces` to `OTEL_EXPORTER_OTLP_ENDPOINT` itself).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

import httpx

from telemetry.otel_export.otlp_http import OTLPConfig, OTLPSender
from telemetry.settings import Settings

__all__ = ["export_configured", "probe_endpoint"]

Status = Literal["ok", "warn", "fail"]
_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_WHERE = (
    "set OTEL_EXPORTER_OTLP_ENDPOINT to the backend's base URL (octel appends /v1/traces), or the "
    "whole URL in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)


def export_configured(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    """Continuous export is on, or an endpoint is set for `octel export otel`."""
    env = os.environ if env is None else env
    return settings.otel_export or any(env.get(v, "").strip() for v in _ENDPOINT_VARS)


def probe_endpoint(client: httpx.Client, env: Mapping[str, str] | None = None) -> tuple[Status, str, str]:
    """(status, detail, fix) of an empty export request to the configured endpoint."""
    config = OTLPConfig.from_env(env)
    url = config.endpoint
    got = OTLPSender(config, client=client).post(b"")
    if got.ok:
        return "ok", f"{url} takes OTLP/HTTP trace exports (answered {got.status} to an empty one)", ""
    if got.status is None:
        return "fail", f"no answer from {url}: {got.message}", f"start the tracing backend, or {_WHERE}"
    if got.status in (401, 403):
        return (
            "fail",
            f"{url} answered {got.status}: it wants credentials",
            "set OTEL_EXPORTER_OTLP_HEADERS, e.g. authorization=Bearer%20<token>",
        )
    if got.status in (404, 405):
        return "fail", f"{url} answered {got.status}: no OTLP/HTTP trace receiver at this URL", _WHERE
    return (
        "fail",
        f"{url} answered {got.status} to an empty export request",
        "check that the URL is the backend's OTLP/HTTP endpoint and that it is up",
    )
