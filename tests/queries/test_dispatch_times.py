"""The older dispatchers wrote times three ways; each reads back as the same UTC instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telemetry.services.ingest.dispatch_import import parse_dispatch_time

instants = st.datetimes(
    min_value=datetime(2001, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000))


@given(instants)
def test_iso_seconds_and_milliseconds_agree(at: datetime) -> None:
    ms = round(at.timestamp() * 1000)
    assert parse_dispatch_time(at.isoformat()) == at
    assert parse_dispatch_time(at.isoformat().replace("+00:00", "Z")) == at
    assert parse_dispatch_time(at.replace(tzinfo=None).isoformat(sep=" ")) == at  # naive text is UTC
    assert parse_dispatch_time(ms) == at
    assert parse_dispatch_time(str(ms)) == at
    assert abs(parse_dispatch_time(ms / 1000) - at) < timedelta(milliseconds=1)  # type: ignore[operator]


@pytest.mark.parametrize("empty", [None, "", 0, "0"])
def test_empty_means_not_ended(empty: object) -> None:
    assert parse_dispatch_time(empty) is None


def test_unreadable_text_raises() -> None:
    with pytest.raises(ValueError, match="unreadable time"):
        parse_dispatch_time("yesterday at noon")
