"""The pure pieces behind the session page: message and turn views, and the archive cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from archiver.store import FolderStore
from telemetry.queries.session_detail import turn_view
from telemetry.queries.timeline import message_view as _message_view
from web.api_archived import ArchiveCache

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_KEYS = st.sampled_from(["info", "parts", "id", "role", "time", "tokens", "error", "cost", "type"])
_MESSAGE = st.dictionaries(_KEYS, _JSON, max_size=6)


def message_view(index: int, m: dict[str, Any]) -> dict[str, Any]:
    """The entry as the API answers it (the model, dumped)."""
    return _message_view(index, m).model_dump(mode="json")


@given(index=st.integers(0, 10_000), m=_MESSAGE)
def test_any_stored_message_becomes_a_timeline_entry(index: int, m: dict[str, Any]) -> None:
    """Archives from any server version render: a strange message is shown, never an error."""
    v = message_view(index, m)
    assert v["index"] == index
    assert isinstance(v["parts"], list) and all(isinstance(p, dict) for p in v["parts"])
    json.dumps(v, allow_nan=False)  # what the API answers with


@given(t=st.dictionaries(st.sampled_from(["tokens", "created", "completed", "duration_ms", "cost"]), _JSON))
def test_any_turn_entry_has_every_column(t: dict[str, Any]) -> None:
    v = turn_view(t).model_dump(mode="json")
    assert {"tokens_input", "tokens_cache_read", "cost_usd", "in_flight", "created_at"} <= set(v)
    json.dumps(v, allow_nan=False)  # what the API answers with


def test_classic_message_summary() -> None:
    m = {
        "info": {
            "id": "msg_1",
            "role": "assistant",
            "agent": "build",
            "time": {"created": 1_795_977_944_450},
            "tokens": {"input": 10, "output": 2, "reasoning": 1, "cache": {"read": 5, "write": 0}},
            "cost": 0.5,
            "error": {"name": "APIError", "data": {"message": "overloaded"}},
        },
        "parts": [{"id": "prt_1", "type": "text", "text": "hi"}, "junk"],
    }
    v = message_view(3, m)
    assert v["in_flight"] is True and v["duration_s"] is None  # no completion time yet
    assert v["tokens"] == {"input": 10, "output": 2, "reasoning": 1, "cache_read": 5, "cache_write": 0}
    assert v["error"] == "APIError: overloaded"
    assert v["created_at"].startswith("2026-11-29T")
    assert [p["id"] for p in v["parts"]] == ["prt_1"]
    user = message_view(0, {"info": {"id": "u", "role": "user", "time": {"created": 1}}, "parts": []})
    assert user["in_flight"] is False and user["tokens"] is None


def test_cache_reads_a_rewritten_archive_again(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(orjson.dumps({"schema_version": 2, "session_id": "s", "messages": []}))
    cache, store = ArchiveCache(max_bytes=10_000), FolderStore(tmp_path)
    first = cache.read(store, path.name)
    assert cache.read(store, path.name) is first  # a page turn does not parse the file again
    path.write_bytes(orjson.dumps({"schema_version": 2, "session_id": "s", "messages": [{"x": 1}]}))
    os.utime(path, ns=(1, 1))  # even when the clock does not move, size and mtime change the key
    assert cache.read(store, path.name)["messages"] == [{"x": 1}]


def test_cache_holds_at_most_its_bytes(tmp_path: Path) -> None:
    def archive(name: str, size: int) -> Path:
        p = tmp_path / name
        p.write_bytes(orjson.dumps({"schema_version": 2, "session_id": name, "pad": "x" * size}))
        return p

    cache, store = ArchiveCache(max_bytes=3_000), FolderStore(tmp_path)
    small = [archive(f"s{i}.json", 900) for i in range(5)]
    for p in small:
        cache.read(store, p.name)
        assert cache.bytes_held <= 3_000
    assert cache.bytes_held > 1_800  # it does keep what fits
    assert cache.read(store, small[-1].name) is cache.read(store, small[-1].name)  # the newest stayed
    big = archive("big.json", 5_000)  # larger than the whole budget: served, never kept
    assert cache.read(store, big.name)["session_id"] == "big.json"
    assert cache.read(store, big.name) is not cache.read(store, big.name)
    assert cache.bytes_held <= 3_000
