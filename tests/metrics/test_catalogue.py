"""The metric catalogue keeps Prometheus' naming rules and covers every write-time counter."""

from __future__ import annotations

import re

import pytest

import telemetry.metrics.catalogue as catalogue_module
import telemetry.metrics.snapshot as snapshot_module
from telemetry.metrics.catalogue import CATALOGUE, by_name
from telemetry.store.aggregates import COUNTERS

_NAME = re.compile(r"^octel_[a-z][a-z0-9_]*[a-z0-9]$")
# Labels that would grow without bound, one series per session, path or message.
_UNBOUNDED = {"session_id", "cycle_id", "id", "run_key", "path", "title", "directory", "message", "pid"}
_NON_BASE_UNITS = {"ms", "milliseconds", "minutes", "hours", "kb", "mb", "percent", "age", "count"}


@pytest.mark.parametrize("m", CATALOGUE, ids=lambda m: m.name)
def test_names_follow_prometheus_conventions(m: catalogue_module.Metric) -> None:
    assert _NAME.match(m.name)
    assert m.name.endswith("_total") == (m.kind == "counter")
    assert not _NON_BASE_UNITS & set(m.name.split("_"))
    if "timestamp" in m.name:
        assert m.name.endswith("_timestamp_seconds") and m.kind == "gauge"
    if m.kind == "histogram":
        assert m.name.endswith("_seconds") and "le" not in m.labels
    assert not _UNBOUNDED & set(m.labels)
    assert len(set(m.labels)) == len(m.labels)
    assert m.help and not m.help[0].islower() and m.help.endswith(".") and "\n" not in m.help


def test_names_are_unique_and_do_not_collide_with_histogram_series() -> None:
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    hists = [m.name for m in CATALOGUE if m.kind == "histogram"]
    series = {f"{h}{s}" for h in hists for s in ("_bucket", "_sum", "_count")}
    assert not series & set(names)
    assert by_name("octel_running_long_worker").kind == "gauge"
    with pytest.raises(KeyError):
        by_name("octel_nope")


def test_every_write_time_counter_is_exposed_with_its_labels() -> None:
    for key, labels in COUNTERS.items():
        stem = re.sub(r"_(bin|bucket|sum|count)$", "", key)
        if stem != key:
            m = by_name(f"octel_{stem}")
            assert m.kind == "histogram"
            assert m.labels == tuple(lbl for lbl in labels if lbl != "le"), key
        else:
            m = by_name(f"octel_{key}")
            assert m.kind == "counter"
            assert m.labels == labels, key
        assert m.source == "aggregate"


def test_every_aggregate_metric_has_its_counters() -> None:
    for m in CATALOGUE:
        if m.source != "aggregate":
            continue
        if m.kind == "histogram":
            assert {f"{m.aggregate_key}_{s}" for s in ("bin", "bucket", "sum", "count")} <= set(COUNTERS)
        else:
            assert m.aggregate_key in COUNTERS, m.name


@pytest.mark.parametrize("module", [catalogue_module, snapshot_module])
def test_public_names(module: object) -> None:
    exported = module.__all__  # type: ignore[attr-defined]
    assert all(hasattr(module, n) for n in exported)
