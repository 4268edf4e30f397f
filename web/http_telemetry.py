"""FastAPI's own OpenTelemetry instrumentation of each request, on only where it can report.

FastAPI (0.16x) asks the OpenTelemetry API at every request whether a tracer, meter or logger
provider has been configured since the previous request: lookups in the process environment
that took a tenth of the event loop's time for a cycle write. octel answers once, when the app
is built: a kind whose provider is configured by then (`opentelemetry-instrument octel serve`,
or `FASTAPI_OTEL_AUTO_CONFIGURE=true`) is instrumented as FastAPI would; a kind with none has
nowhere to go, so FastAPI is told to leave it off rather than ask again at every request.
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any, TypedDict

from fastapi import FastAPI

if TYPE_CHECKING:  # FastAPI before 0.16x has none
    from fastapi.telemetry import TelemetryConfig

__all__ = ["FastApiTelemetry", "telemetry_config"]


class FastApiTelemetry(TypedDict, total=False):
    """The keyword `FastAPI(…)` takes for its own telemetry, when it has any."""

    telemetry: TelemetryConfig


# the placeholders the OpenTelemetry API hands out until a provider is set
_DEFERRED = frozenset({"ProxyTracerProvider", "_ProxyMeterProvider", "ProxyLoggerProvider"})


def _configured(provider: Any) -> bool:
    return type(provider).__name__ not in _DEFERRED


def telemetry_config() -> FastApiTelemetry:
    """Keyword arguments for `FastAPI(…)`: `telemetry` switching off each kind of request
    telemetry that has no provider now; nothing for a FastAPI without native telemetry, or
    when FastAPI is to configure the providers itself."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    if os.environ.get("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true":
        return {}
    from opentelemetry import _logs, metrics, trace  # installed with FastAPI's telemetry

    return {
        "telemetry": {
            "tracing": _configured(trace.get_tracer_provider()),
            "metrics": _configured(metrics.get_meter_provider()),
            "logs": _configured(_logs.get_logger_provider()),
        }
    }
