"""The resource and instrumentation scope every exported span carries, and their encoder.

The resource holds `OTEL_RESOURCE_ATTRIBUTES` (the standard `key=value,…` list, values
URL-encoded) and then octel's own: `service.name` and `openinference.project.name`, the project
Phoenix files the trace under, both the service name setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import unquote

from archiver.document import ARCHIVER_VERSION
from telemetry.otel_export.conventions import SCHEMA_URL
from telemetry.otel_export.spans import AttrValue
from telemetry.otel_export.wire import SpanEncoder

__all__ = ["SCOPE_NAME", "SCOPE_VERSION", "encoder_for", "resource_attributes"]

SCOPE_NAME = "octel.otel_export"
SCOPE_VERSION = ARCHIVER_VERSION


def resource_attributes(service_name: str, env: Mapping[str, str] | None = None) -> dict[str, AttrValue]:
    env = os.environ if env is None else env
    out: dict[str, AttrValue] = {}
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, eq, value = item.partition("=")
        if eq and key.strip():
            out[unquote(key).strip()] = unquote(value).strip()
    out["service.name"] = service_name
    out["openinference.project.name"] = service_name
    return out


def encoder_for(service_name: str, env: Mapping[str, str] | None = None) -> SpanEncoder:
    """An encoder of requests from octel's resource and scope, both at the conventions' schema."""
    return SpanEncoder(
        resource_attributes(service_name, env),
        resource_schema_url=SCHEMA_URL,
        scope_name=SCOPE_NAME,
        scope_version=SCOPE_VERSION,
        scope_schema_url=SCHEMA_URL,
    )
