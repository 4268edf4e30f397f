"""`/metrics`: the store's metrics, computed at scrape time, and this process's request metrics.

Each app has its own registry (never prometheus_client's global one) holding one collector. The
store is the single source of truth for fleet metrics, so restarts and several octel instances
never reset or double a counter. Request metrics live in this process and are labelled by route
template, never by raw path. One uvicorn worker: no multiprocess mode.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.metrics_core import Metric as PromFamily
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry.metrics.catalogue import CATALOGUE, HTTP_LATENCY_BUCKETS, Metric, by_name
from telemetry.metrics.snapshot import Family, HistogramSeries, Series, derive, read_store
from telemetry.services.heartbeat_files import refresh_heartbeat_files
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow

__all__ = ["RequestMetricsMiddleware", "StoreCollector", "app_metrics", "router"]

log = logging.getLogger("octel")
router = APIRouter(tags=["metrics"])

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_UNMATCHED = "unmatched"  # any path no route claims: one label value, not the path itself
_REQUESTS = by_name("octel_http_requests_total")
_LATENCY = by_name("octel_http_request_duration_seconds")


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


@dataclass
class _Requests:
    """Request counts and latencies of this process; written on the loop, read by scrapes."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    latency: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # per bucket, then sum

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self.lock:
            k = (method, route, str(status))
            self.counts[k] = self.counts.get(k, 0) + 1
            h = self.latency.setdefault((method, route), [0.0] * (len(HTTP_LATENCY_BUCKETS) + 2))
            h[bisect.bisect_left(HTTP_LATENCY_BUCKETS, seconds)] += 1
            h[-1] += seconds

    def families(self) -> list[Family]:
        with self.lock:
            counts = sorted(self.counts.items())
            latency = sorted((k, list(v)) for k, v in self.latency.items())
        requests = tuple(Series(k, float(v)) for k, v in counts)
        hists = []
        for k, h in latency:
            running, buckets = 0.0, []
            for le, n in zip((*map(repr, HTTP_LATENCY_BUCKETS), "+Inf"), h[:-1], strict=True):
                running += n
                buckets.append((le, running))
            hists.append(HistogramSeries(k, tuple(buckets), h[-1]))
        return [Family(_REQUESTS, requests), Family(_LATENCY, tuple(hists))]


class StoreCollector:
    """Reads the store at each scrape; `describe` names the families without touching it."""

    def __init__(self, app: FastAPI, requests: _Requests) -> None:
        self._app, self._requests = app, requests

    def describe(self) -> Iterator[PromFamily]:
        for m in CATALOGUE:
            yield _empty(m)

    def collect(self) -> Iterator[PromFamily]:
        state = self._app.state
        families: list[Family] | None = None
        engine = getattr(state, "engine", None)
        if engine is not None:
            try:
                with session_scope(engine, write=False) as db:
                    reads = read_store(db, utcnow(), state.settings.long_worker_seconds)
                families = derive(reads)
            except SQLAlchemyError as e:
                log.warning("octel: /metrics could not read the store: %s", e.__class__.__name__)
        if families is None:  # only `octel_store_up 0`, so an alert can tell why the rest is gone
            families = [Family(by_name("octel_store_up"), (Series((), 0.0),))]
        for f in families + self._requests.families():
            yield _to_prometheus(f)


@dataclass(frozen=True)
class _AppMetrics:
    registry: CollectorRegistry
    requests: _Requests


_create_lock = threading.Lock()


def app_metrics(app: FastAPI) -> _AppMetrics:
    """The app's registry and request metrics, made on first use."""
    found: _AppMetrics | None = getattr(app.state, "octel_metrics", None)
    if found is not None:
        return found
    with _create_lock:
        found = getattr(app.state, "octel_metrics", None)
        if found is None:
            registry = CollectorRegistry(auto_describe=True)
            requests = _Requests()
            registry.register(StoreCollector(app, requests))
            ProcessCollector(registry=registry)
            found = _AppMetrics(registry, requests)
            app.state.octel_metrics = found
        return found


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
        requests = app_metrics(scope["app"]).requests
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
            requests.observe(method, _route_template(scope), status, time.perf_counter() - started)


def _refresh_heartbeat_files(request: Request) -> None:
    settings: Any = request.app.state.settings
    try:
        globs = settings.heartbeat_globs
        if globs:
            with session_scope(request.app.state.engine) as db:
                refresh_heartbeat_files(db, globs, utcnow())
    except (SQLAlchemyError, ValueError, OSError) as e:  # the scrape still answers, store_up says why
        log.warning("octel: /metrics could not refresh heartbeat files: %s", e)


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """The classic text format (0.0.4), computed now from the store (heartbeat files read first)."""
    _refresh_heartbeat_files(request)
    body = generate_latest(app_metrics(request.app).registry)
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)
