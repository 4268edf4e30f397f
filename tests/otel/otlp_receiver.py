"""A minimal OTLP/HTTP (protobuf) trace receiver on 127.0.0.1, for tests and the benchmark.

It decodes each request with the OpenTelemetry protobuf classes (gunzipped when the request says
gzip) and keeps the spans; ``fail`` makes the next N requests answer ``fail_code`` (503: a backend
that is briefly down), with ``Retry-After: retry_after`` when set; ``reject`` answers the next
request 200 with a partial success refusing that many spans; clearing ``release`` makes requests
wait until it is set again (a backend that does not answer).
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OTLPReceiver", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    resource: dict[str, Any]


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OTLPReceiver:
    def __init__(self, keep: bool = True) -> None:
        self.keep = keep
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.span_count = 0
        self.headers: list[dict[str, str]] = []
        self.fail = 0
        self.fail_code = 503
        self.retry_after: str | None = None
        self.reject = 0
        self.bodies: list[bytes] = []  # the raw request bodies, as sent (before gunzip)
        self.release = threading.Event()
        self.release.set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def take(self, body: bytes, headers: dict[str, str]) -> int:
        self.release.wait()
        with self._lock:
            self.requests += 1
            self.headers.append(headers)
            if self.keep:
                self.bodies.append(body)
            if self.fail > 0:
                self.fail -= 1
                return self.fail_code
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        got = []
        for rs in req.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    if not self.keep:
                        got.append(None)
                        continue
                    got.append(
                        ReceivedSpan(
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.name,
                            s.kind,
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            _attrs(s.attributes),
                            [(e.name, _attrs(e.attributes)) for e in s.events],
                            s.status.code,
                            resource,
                        )
                    )
        with self._lock:
            self.span_count += len(got)
            if self.keep:
                self.spans.extend(x for x in got if x is not None)
        return 200


def _handler(rx: OTLPReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body leave in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK add 40 ms to every answer on a kept-alive connection
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            extra: dict[str, str] = {}
            if self.path != "/v1/traces":
                code, data = 404, b""
            else:
                code = rx.take(body, {k.lower(): v for k, v in self.headers.items()})
                answer = ExportTraceServiceResponse()
                if code == 200 and rx.reject:
                    answer.partial_success.rejected_spans, rx.reject = rx.reject, 0
                    answer.partial_success.error_message = "too old"
                data = answer.SerializeToString() if code == 200 else b""
                if code != 200 and rx.retry_after is not None:
                    extra["Retry-After"] = rx.retry_after
            self.send_response(code)
            for k, v in extra.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
