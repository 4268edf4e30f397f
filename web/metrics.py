"""`/metrics`: the store's metrics, computed at scrape time, and this process's request metrics.

Each app has its own registry (never prometheus_client's global one) holding one collector. The
store is the single source of truth for fleet metrics, so restarts and several octel instances
never reset or double a counter. Request metrics live in this process and are labelled by route
template, never by raw path. No multiprocess mode: under `octel serve --workers N` each worker
answers with the store's metrics (the same from every worker) and its own request metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.metrics_core import Metric as PromFamily
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry.metrics.catalogue import CATALOGUE, HTTP_LATENCY_BUCKETS, Metric, by_name
from telemetry.metrics.snapshot import Family, HistogramSeries, Series, derive, read_store
from telemetry.services.ingest.heartbeat_files import refresh_heartbeat_files
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from web.app_state import app_state
from web.exposition import render

__all__ = ["RequestMetricsMiddleware", "StoreCollector", "app_metrics", "router", "store_families"]

log = logging.getLogger("octel")
router = APIRouter(tags=["metrics"])

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_UNMATCHED = "unmatched"  # any path no route claims: one label value, not the path itself
_REQUESTS = by_name("octel_http_requests_total")
_LATENCY = by_name("octel_http_request_duration_seconds")
_FROM_STORE = tuple(m for m in CATALOGUE if m.source != "process")


def _empty(m: Metric) -> PromFamily:
    labels = list(m.labels)
    if m.kind == "counter":
        return CounterMetricFamily(m.name, m.help, labels=labels)
    if m.kind == "histogram":
        return HistogramMetricFamily(m.name, m.help, labels=labels)
    return GaugeMetricFamily(m.name, m.help, labels=labels)


def _to_prometheus(f: Family) -> PromFamily:
    fam = _empty(f.metric)
    for s in f.series:
        if isinstance(s, HistogramSeries):
            assert isinstance(fam, HistogramMetricFamily)
            fam.add_metric(list(s.labels), buckets=list(s.buckets), sum_value=s.sum)
        else:
            assert isinstance(fam, CounterMetricFamily | GaugeMetricFamily)
            fam.add_metric(list(s.labels), s.value)
    return fam


class StoreCollector:
    """Reads the store at each scrape; `describe` names the families without touching it."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    def describe(self) -> Iterator[PromFamily]:
        for m in _FROM_STORE:
            yield _empty(m)

    def collect(self) -> Iterator[PromFamily]:
        for f in store_families(self._app):
            yield _to_prometheus(f)


def store_families(app: FastAPI) -> list[Family]:
    """The store's families now; only `octel_store_up 0` when the store cannot be read, so an
    alert can tell why the rest is gone."""
    state = app_state(app)
    engine: Engine | None = getattr(state, "engine", None)  # none until the lifespan opens it
    if engine is not None:
        try:
            with session_scope(engine, write=False) as db:
                reads = read_store(db, utcnow(), state.settings.long_worker_seconds, quotas=state.quotas)
            return derive(reads)
        except SQLAlchemyError as e:
            log.warning("octel: /metrics could not read the store: %s", e.__class__.__name__)
    return [Family(by_name("octel_store_up"), (Series((), 0.0),))]


@dataclass(frozen=True)
class _AppMetrics:
    """The app's own registry and this process's request metrics (prometheus-client's types).

    `registry` holds everything, the store's collector too; `process` holds this process's
    metrics alone, which `/metrics` writes after the store's families (see `web.exposition`).
    """

    registry: CollectorRegistry
    process: CollectorRegistry
    requests: Counter
    latency: Histogram
    # each label set's series, found once: a request counts and times itself with them
    series: dict[tuple[str, str, str], tuple[Any, Any]] = field(default_factory=dict)

    def record(self, method: str, route: str, status: str, seconds: float) -> None:
        found = self.series.get((method, route, status))
        if found is None:
            found = (self.requests.labels(method, route, status), self.latency.labels(method, route))
            self.series[(method, route, status)] = found
        found[0].inc()
        found[1].observe(seconds)


def app_metrics(app: FastAPI) -> _AppMetrics:
    """The app's registry and request metrics, made on first use."""
    return app_state(app).made(_AppMetrics, lambda: _new_metrics(app))


def _new_metrics(app: FastAPI) -> _AppMetrics:
    # No `_created` series: the catalogue names every series /metrics has (and the store's
    # own counters have none). One switch for the process, as octel owns it.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry(auto_describe=True)
    registry.register(StoreCollector(app))
    # The catalogue's process metrics, as prometheus-client's own Counter and Histogram.
    requests = Counter(_REQUESTS.name, _REQUESTS.help, list(_REQUESTS.labels), registry=registry)
    latency = Histogram(
        _LATENCY.name,
        _LATENCY.help,
        list(_LATENCY.labels),
        buckets=HTTP_LATENCY_BUCKETS,
        registry=registry,
    )
    process = CollectorRegistry(auto_describe=True)
    for c in (requests, latency, ProcessCollector(registry=registry)):
        process.register(c)
    return _AppMetrics(registry, process, requests, latency)


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else _UNMATCHED


class RequestMetricsMiddleware:
    """Counts each HTTP request by method, route template and status, and times it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        metrics = app_metrics(scope["app"])
        started = time.perf_counter()
        status = 500  # an exception before the response started ends as a 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "other"
            route = _route_template(scope)
            metrics.record(method, route, str(status), time.perf_counter() - started)


def _refresh_heartbeat_files(request: Request) -> None:
    state = app_state(request.app)
    try:
        globs = state.settings.heartbeat_globs
        if globs:
            with session_scope(state.engine) as db:
                refresh_heartbeat_files(db, globs, utcnow(), redactor=state.redactor)
    except (SQLAlchemyError, ValueError, OSError) as e:  # the scrape still answers, store_up says why
        log.warning("octel: /metrics could not refresh heartbeat files: %s", e)


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """The classic text format (0.0.4), computed now from the store (heartbeat files read first)."""
    _refresh_heartbeat_files(request)
    store = render(store_families(request.app)).encode()
    body = store + generate_latest(app_metrics(request.app).process)
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)
