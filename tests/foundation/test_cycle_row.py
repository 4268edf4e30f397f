"""A `CycleRow` is the `cycle` table's row, column for column, and ingestion's rows on each
engine (`cycle_rows.rows_for`) are frozen: a change is a new row, the old one stays as read. A
cycle's public fields are `CycleRecord`'s, filled from its row."""

from __future__ import annotations

import dataclasses
import typing
from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine

from telemetry.queries.cycles import cycle_dict
from telemetry.queries.fleet_models import CycleRecord
from telemetry.services.ingest import cycle_rows
from telemetry.store.cycle_row import CycleRow, CycleValues
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle
from telemetry.timeutil import as_utc


def _utc(row: CycleRow) -> CycleRow:
    return dataclasses.replace(row, started_at=as_utc(row.started_at), updated_at=as_utc(row.updated_at))


def test_a_cycle_row_has_the_cycle_tables_columns_in_its_order() -> None:
    columns = [c.name for c in Cycle.__table__.columns]  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(CycleRow)] == columns


def test_a_cycle_row_field_may_be_none_where_its_column_may_be_null() -> None:
    nullable = {c.name: c.nullable for c in Cycle.__table__.columns}  # type: ignore[attr-defined]
    nullable["id"] = True  # a row held back as new has no id yet
    assert {f.name: "None" in str(f.type) for f in dataclasses.fields(CycleRow)} == nullable


def test_cycle_values_are_a_rows_columns_but_its_id_of_the_same_types() -> None:
    row = typing.get_type_hints(CycleRow)
    del row["id"]  # the table gives it
    assert typing.get_type_hints(CycleValues) == row
    assert not CycleValues.__required_keys__  # an insert or an update names only what it sets


def test_each_engine_has_one_cycle_rows_chosen_once(engine: Engine) -> None:
    assert cycle_rows.rows_for(engine.dialect.name) is cycle_rows.rows_for(engine.dialect.name)
    assert cycle_rows.rows_for(engine.dialect.name).holds_back == (engine.dialect.name == "postgresql")


def test_a_written_row_reads_back_and_a_change_is_a_new_row(engine: Engine) -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    values: CycleValues = {
        "cycle_id": "c1",
        "driver": "d",
        "started_at": at,
        "start_synthesised": False,
        "raw": {"begin": {"k": 1}},
        "updated_at": at,
    }
    with session_scope(engine) as db:
        new = cycle_rows.insert_new(db, values)
        assert new is not None and new.id is not None
        assert cycle_rows.insert_new(db, values) is None  # stored already
        assert cycle_rows.read(db, "c1") == new
        done = cycle_rows.update_row(db, new, {"terminal_state": "done", "processed_count": 3})
        assert (new.terminal_state, new.processed_count) == (None, None)  # as it was read
        assert done == dataclasses.replace(new, terminal_state="done", processed_count=3)
        with pytest.raises(dataclasses.FrozenInstanceError):
            done.driver = "other"  # type: ignore[misc]
    with session_scope(engine, write=False) as db:
        again = cycle_rows.read(db, "c1")
        assert again is not None
        assert _utc(again) == _utc(done)  # SQLite gives its times back naive
        assert cycle_rows.read(db, "c2") is None


def test_a_cycles_public_fields_are_its_records_from_its_row() -> None:
    """`CycleRecord` declares them once: the columns a row gives are copied as they are (of the
    same types), the times computed, and every other field has a default."""
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = CycleRow(
        7, "c1", "d", "h", 42, at, at.replace(minute=9), 1, 2, 3, 4, 5, "done", "ok", "e", "s", 1.5,
        True, {"begin": {}}, at,
    )  # fmt: skip
    d = cycle_dict(row)
    fields = CycleRecord.model_fields
    assert list(d) == [n for n in fields if n in d]
    columns = typing.get_type_hints(CycleRow)
    copied = set(d) & set(columns) - {"started_at", "ended_at"}
    assert {k: d[k] for k in copied} == {k: getattr(row, k) for k in copied}
    assert all(fields[k].annotation == columns[k] for k in copied)
    assert (d["started_at"], d["ended_at"], d["in_flight"], d["duration_s"]) == (
        at.isoformat(),
        at.replace(minute=9).isoformat(),
        False,
        300.0,
    )
    assert all(not fields[k].is_required() for k in set(fields) - set(d))
    assert CycleRecord.model_validate(d).model_dump(include=set(d)) == d
