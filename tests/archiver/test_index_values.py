"""The values the indexers write name the tables' columns, with the models' types: a column
renamed or retyped in a model cannot drift from what the indexers build."""

from __future__ import annotations

import typing

from telemetry.services.index.index_values import (
    NO_MARKS,
    CountedValues,
    FindingValues,
    IndexValues,
    UsageMarks,
)
from telemetry.store.models import CountedFinding, Finding, SessionIndex


def _columns(model: typing.Any) -> dict[str, object]:
    hints = typing.get_type_hints(model)
    return {c.name: hints[c.name] for c in model.__table__.columns}


def test_index_values_are_the_session_index_columns_but_those_the_store_computes() -> None:
    columns = _columns(SessionIndex)
    values = typing.get_type_hints(IndexValues)
    assert {k: columns[k] for k in values if k in columns} == values
    assert set(columns) - set(values) == {"id", "tree_cost_usd", "tree_tokens", "tree_session_count"}
    # an update leaves the cycle a row names as it is unless a cycle names the record
    assert IndexValues.__optional_keys__ == {"cycle_id", "driver"}


def test_usage_marks_are_the_counted_columns_and_start_at_zero() -> None:
    counted = {k: v for k, v in _columns(SessionIndex).items() if k.startswith("counted_")}
    assert typing.get_type_hints(UsageMarks) == counted
    assert set(NO_MARKS) == set(counted) and not any(NO_MARKS.values())


def test_finding_values_are_finding_and_counted_finding_columns() -> None:
    finding = _columns(Finding)
    values = typing.get_type_hints(FindingValues)
    assert {k: finding[k] for k in values} == values
    counted = _columns(CountedFinding)
    del counted["id"]
    assert typing.get_type_hints(CountedValues) == counted
