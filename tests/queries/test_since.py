"""One `since` type: the CLI's options and the API's query parameters accept and refuse alike."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from telemetry.settings import Settings
from telemetry.timeutil import parse_since, since_value
from web.app import create_app

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TEXTS = st.one_of(
    st.from_regex(r"\A\s*\d{1,4}(\.\d)?\s*[smhdw]\s*\Z"),
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    st.text(max_size=12),
)
SAMPLES = [
    "24h",
    " 7d ",
    "90s",
    "2w",
    "2026-11-01T00:00:00+00:00",
    "2026-11-01",
    "",
    "yesterday",
    "5 parsecs",
]


@given(TEXTS)
def test_since_value_is_parse_since_with_blank_as_none(text: str) -> None:
    try:
        expected = parse_since(text.strip(), NOW) if text.strip() else None
    except ValueError as e:
        with pytest.raises(ValueError) as got:
            since_value(text, NOW)
        assert str(got.value) == str(e)  # the same one sentence, no pydantic prefix
    else:
        assert since_value(text, NOW) == expected


def test_route_and_cli_refuse_the_same_texts(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        for text in SAMPLES:
            try:
                since_value(text)
                refused = None
            except ValueError as e:
                refused = str(e)
            r = client.get("/api/cycles", params={"since": text})
            if refused is None:
                assert r.status_code == 200, (text, r.text)
            else:
                assert r.status_code == 422
                err = r.json()["error"]
                assert err["fields"] == [{"field": "query.since", "message": refused}]
