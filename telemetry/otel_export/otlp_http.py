"""OTLP/HTTP: where traces go, as the standard variables say, and one POST of a protobuf request.

The variables are the OpenTelemetry SDK's (read as its Python exporter reads them):

- `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as given; else `OTEL_EXPORTER_OTLP_ENDPOINT` with
  `/v1/traces` appended; else `http://localhost:4318/v1/traces`;
- `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs,
  comma-separated, values URL-encoded;
- `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT`: seconds (10);
- `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION`, else `OTEL_EXPORTER_OTLP_COMPRESSION`: `gzip` or `none`;
- `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`, else `OTEL_EXPORTER_OTLP_CERTIFICATE`: a CA bundle.

`post` makes one attempt and says whether another may help: 429, any 5xx (the OTLP specification
lists 502-504; a 500 from a backend whose store is briefly busy passes too), a connection error
or a timeout. The caller owns retries and backoff.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

__all__ = ["OTLPConfig", "OTLPSender", "Outcome", "endpoint", "retryable"]

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT = 10.0
_MAX_RETRY_AFTER = 60.0  # seconds a backend may ask us to wait, at most


def _env(env: Mapping[str, str], name: str) -> str | None:
    v = env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}") or env.get(f"OTEL_EXPORTER_OTLP_{name}")
    return v.strip() if v and v.strip() else None


def endpoint(env: Mapping[str, str] | None = None) -> str:
    """Where spans go, worked out from the standard variables."""
    env = os.environ if env is None else env
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    return base + ("v1/traces" if base.endswith("/") else "/v1/traces")


def _headers(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        name, eq, value = item.partition("=")
        name = unquote(name).strip().lower()
        if eq and name:  # a pair without a name or '=' is skipped, as the SDK does
            out[name] = unquote(value).strip()
    return out


@dataclass(frozen=True)
class OTLPConfig:
    endpoint: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    gzip: bool = False
    certificate: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, timeout: float | None = None) -> OTLPConfig:
        """The configuration the standard variables give (``timeout`` overrides theirs)."""
        env = os.environ if env is None else env
        raw = _env(env, "TIMEOUT")
        try:
            t = float(raw) if raw is not None else DEFAULT_TIMEOUT
        except ValueError:
            t = DEFAULT_TIMEOUT  # the SDK falls back the same way on a value it cannot read
        return cls(
            endpoint=endpoint(env),
            headers=_headers(_env(env, "HEADERS")),
            timeout=timeout if timeout is not None else (t if t > 0 else DEFAULT_TIMEOUT),
            gzip=(_env(env, "COMPRESSION") or "").lower() == "gzip",
            certificate=_env(env, "CERTIFICATE"),
        )


@dataclass(frozen=True)
class Outcome:
    ok: bool
    retry: bool = False  # another attempt may succeed
    rejected: int = 0  # spans a 2xx answer says it did not keep (partial success)
    retry_after: float | None = None  # seconds the backend asked us to wait
    message: str = ""
    status: int | None = None  # the HTTP status, when there was an answer


def retryable(status: int) -> bool:
    return status == 429 or 500 <= status < 600


def _retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER) if value else None
    except ValueError:
        return None  # an HTTP date: the caller's own backoff applies


def _rejected(response: httpx.Response) -> tuple[int, str]:
    if not response.content:
        return 0, ""
    try:
        got = ExportTraceServiceResponse.FromString(response.content)
    except Exception:  # a backend that answers 2xx with something else still took the spans
        return 0, ""
    return int(got.partial_success.rejected_spans), got.partial_success.error_message


class OTLPSender:
    """Posts encoded export requests over one kept-alive connection; one thread at a time."""

    def __init__(self, config: OTLPConfig | None = None, *, client: httpx.Client | None = None) -> None:
        self.config = config or OTLPConfig.from_env()
        headers = {**self.config.headers, "content-type": "application/x-protobuf"}
        if self.config.gzip:
            headers["content-encoding"] = "gzip"
        self._headers = headers
        # no TLS context for a plain-http endpoint: building one loads the CA bundle (~25 ms of
        # CPU), and redirects, which could lead to https, are not followed
        tls = self.config.endpoint.lower().startswith("https:")
        verify = (self.config.certificate or True) if tls else False
        self._client = client or httpx.Client(timeout=self.config.timeout, verify=verify)
        self._own_client = client is None

    def post(self, body: bytes) -> Outcome:
        data = gzip.compress(body, compresslevel=6) if self.config.gzip else body
        try:
            r = self._client.post(self.config.endpoint, content=data, headers=self._headers)
        except httpx.TimeoutException:
            return Outcome(False, retry=True, message=f"no answer within {self.config.timeout:g} s")
        except httpx.TransportError as exc:
            return Outcome(False, retry=True, message=f"cannot reach {self.config.endpoint}: {exc}")
        if 200 <= r.status_code < 300:
            rejected, why = _rejected(r)
            return Outcome(True, rejected=rejected, message=why, status=r.status_code)
        return Outcome(
            False,
            status=r.status_code,
            retry=retryable(r.status_code),
            retry_after=_retry_after(r.headers.get("retry-after")),
            message=f"{self.config.endpoint} answered {r.status_code} {r.reason_phrase}".rstrip(),
        )

    def close(self) -> None:
        if self._own_client:
            self._client.close()
