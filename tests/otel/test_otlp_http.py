"""OTLP/HTTP sending: the standard variables, retries on what may pass (429, 5xx, no connection),
no retry on a refusal, partial success, gzip; against a real local receiver."""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otel_store import archive
from otlp_receiver import OTLPReceiver

from telemetry.otel_export import export as export_module
from telemetry.otel_export.export import TreeExport, TreeExporter
from telemetry.otel_export.otlp_http import OTLPConfig, OTLPSender, endpoint
from telemetry.settings import Settings
from telemetry.store.db import make_engine


def test_the_standard_variables_configure_the_sender() -> None:
    assert endpoint({}) == "http://localhost:4318/v1/traces"
    assert endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:6006"}) == "http://h:6006/v1/traces"
    assert endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:6006/"}) == "http://h:6006/v1/traces"
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}
    assert endpoint(both) == "http://t/x", "the traces endpoint is used as given"
    cfg = OTLPConfig.from_env(
        {
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc, x-a = 1,broken,=nameless",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5",
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
        }
    )
    assert cfg.headers == {"authorization": "Bearer abc", "x-a": "1"}
    assert cfg.timeout == 2.5 and cfg.gzip
    traces_first = OTLPConfig.from_env(
        {"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"}
    )
    assert traces_first.headers == {"b": "2"}
    assert OTLPConfig.from_env({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}).timeout == 10.0
    assert OTLPConfig.from_env({}, timeout=3).timeout == 3


@pytest.fixture
def cfg(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]


@pytest.fixture
def rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as r:
        yield r


def export(
    cfg: Settings, url: str, root: str, attempts: int = 3, **env: str
) -> tuple[TreeExport, TreeExporter]:
    engine = make_engine(cfg.db_url)
    config = OTLPConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url, **env}, timeout=2)
    ex = TreeExporter(cfg, engine, sender=OTLPSender(config), attempts=attempts, backoff_seconds=0.01)
    try:
        return ex.export_root(root), ex
    finally:
        ex.shutdown()
        engine.dispose()


def test_what_may_pass_is_retried_and_then_sent(cfg: Settings, rx: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree")
    for code, retry_after in ((503, None), (429, "0"), (500, None), (504, "1")):
        rx.fail, rx.fail_code, rx.retry_after = 2, code, retry_after
        before = rx.requests
        got, _ = export(cfg, rx.endpoint, root)
        assert rx.requests == before + 3, f"{code}: two failures, then the request that is taken"
        assert got.exported == got.spans > 0 and got.dropped == 0 and got.error is None


def test_a_refusal_is_not_retried_and_says_why(cfg: Settings, rx: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree")
    rx.fail, rx.fail_code = 5, 400
    got, _ = export(cfg, rx.endpoint, root)
    assert rx.requests == 1
    assert got.exported == 0 and got.dropped == got.spans
    assert got.error is not None and "answered 400" in got.error and rx.endpoint in got.error


def test_a_backend_that_stays_down_is_tried_then_dropped(cfg: Settings, rx: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree")
    rx.fail, rx.fail_code = 100, 503
    got, _ = export(cfg, rx.endpoint, root, attempts=4)
    assert rx.requests == 4 and got.dropped == got.spans and "503" in (got.error or "")


def test_no_listener_is_a_connection_error_retried_then_reported(cfg: Settings) -> None:
    root = archive(cfg, "healthy")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    got, _ = export(cfg, url, root)
    assert got.exported == 0 and got.dropped == got.spans > 0
    assert got.error is not None and "cannot reach" in got.error and url in got.error


def test_partial_success_counts_the_refused_spans_as_dropped(cfg: Settings, rx: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree")
    rx.reject = 3
    got, _ = export(cfg, rx.endpoint, root)
    assert rx.requests == 1, "a partial success is an answer, not a failure to retry"
    assert got.dropped == 3 and got.exported == got.spans - 3
    assert got.error is not None and "too old" in got.error


def test_gzip_and_headers_go_as_configured(cfg: Settings, rx: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree")
    got, _ = export(
        cfg,
        rx.endpoint,
        root,
        OTEL_EXPORTER_OTLP_COMPRESSION="gzip",
        OTEL_EXPORTER_OTLP_HEADERS="x-team=octel",
    )
    assert got.exported == got.spans == len(rx.spans) > 0
    h = rx.headers[0]
    assert h["content-encoding"] == "gzip" and h["x-team"] == "octel"
    assert h["content-type"] == "application/x-protobuf"
    assert gzip.decompress(rx.bodies[0])  # really compressed on the wire


def test_requests_on_their_way_while_the_next_is_prepared_are_all_counted(
    cfg: Settings, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "BATCH_SPANS", 4)  # many requests from two trees
    roots = [archive(cfg, "subagent_tree"), archive(cfg, "doom_loop")]
    engine = make_engine(cfg.db_url)
    config = OTLPConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint}, timeout=2)
    ex = TreeExporter(cfg, engine, sender=OTLPSender(config), attempts=1)
    try:
        got = ex.export_roots(roots)
        assert [t.exported for t in got] == [t.spans for t in got] and all(t.spans > 4 for t in got)
        assert rx.requests == sum(-(-t.spans // 4) for t in got)  # no tree shares a 4-span request
        assert len(rx.spans) == len({s.span_id for s in rx.spans}) == sum(t.spans for t in got)
        rx.fail, rx.fail_code = 1000, 400  # then a backend that refuses everything
        again = ex.export_roots(roots)
        assert [t.dropped for t in again] == [t.spans for t in again]
        assert all("answered 400" in (t.error or "") for t in again)
    finally:
        ex.shutdown()
        engine.dispose()


# bytes: each tree here is 13-17 kB (spans of up to 1.3 kB), so 20 kB holds one tree and not two,
# and 1 kB is less than some spans (those go alone)
@pytest.mark.parametrize("budget", [20_000, 1000])
def test_requests_hold_at_most_their_byte_budget_and_small_trees_stay_whole(
    cfg: Settings, rx: OTLPReceiver, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    monkeypatch.setattr(export_module, "BATCH_BYTES", budget)
    roots = [archive(cfg, "doom_loop"), archive(cfg, "tool_errors"), archive(cfg, "subagent_tree")]
    engine = make_engine(cfg.db_url)
    config = OTLPConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint}, timeout=2)
    ex = TreeExporter(cfg, engine, sender=OTLPSender(config), attempts=1)
    try:
        got = ex.export_roots(roots)
    finally:
        ex.shutdown()
        engine.dispose()
    assert [t.exported for t in got] == [t.spans for t in got] and all(t.spans for t in got)
    assert rx.requests > 1
    trees_of_requests = []
    for body in rx.bodies:
        spans = ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans
        # each Span field: its bytes, a tag and a length of up to 2 bytes
        assert len(spans) == 1 or sum(s.ByteSize() + 3 for s in spans) <= budget
        trees_of_requests.append({s.trace_id.hex() for s in spans})
    sent = [
        s.trace_id.hex()
        for body in rx.bodies
        for s in ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans
    ]
    assert len(sent) == sum(t.spans for t in got)
    assert list(dict.fromkeys(sent)) == [t.trace_id for t in got]  # in order, each tree once
    # a tree that fits a request is never split across two
    for t in got:
        holding = [i for i, trees in enumerate(trees_of_requests) if t.trace_id in trees]
        size = sum(
            s.ByteSize() + 3
            for b in (rx.bodies[i] for i in holding)
            for s in ExportTraceServiceRequest.FromString(b).resource_spans[0].scope_spans[0].spans
            if s.trace_id.hex() == t.trace_id
        )
        assert len(holding) == 1 or size > budget
