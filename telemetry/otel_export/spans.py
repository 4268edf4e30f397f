"""Span records: plain frozen data that the mapping returns and the exporter turns into OTLP.

Ids are derived, not random: the trace id from the root session id and each span id from the
root session id and the span's own key (a session, message, tool part or cycle id). Exporting a
tree twice therefore sends the same ids, and a tracing backend keeps one trace instead of two.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal, NamedTuple

__all__ = ["AttrValue", "SpanEvent", "SpanRecord", "span_id", "span_ids", "trace_id"]

AttrValue = str | bool | int | float | Sequence[str]
Kind = Literal["INTERNAL", "CLIENT"]
Status = Literal["UNSET", "OK", "ERROR"]
_NO_ATTRIBUTES: Mapping[str, AttrValue] = MappingProxyType({})


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode()).digest()


def trace_id(root_session_id: str) -> int:
    """128-bit trace id of a session tree (never 0, which OTLP reads as "no trace")."""
    return int.from_bytes(_digest("octel-trace", root_session_id)[:16], "big") or 1


def span_id(root_session_id: str, key: str) -> int:
    """64-bit span id of one element (``key``) of a tree (never 0)."""
    return int.from_bytes(_digest("octel-span", root_session_id, key)[:8], "big") or 1


def span_ids(root_session_id: str, keys: Iterable[str]) -> dict[str, int]:
    """`span_id` of each key of one tree: the hash of the shared prefix is computed once."""
    prefix = hashlib.sha256(f"octel-span\x1f{root_session_id}\x1f".encode())
    out = {}
    for key in keys:
        h = prefix.copy()
        h.update(key.encode())
        out[key] = int.from_bytes(h.digest()[:8], "big") or 1
    return out


class SpanEvent(NamedTuple):
    name: str
    time_ns: int
    attributes: Mapping[str, AttrValue] = _NO_ATTRIBUTES


# Named tuples rather than frozen dataclasses: as immutable, and a tree makes thousands of them
# (a frozen dataclass sets each field through object.__setattr__, several times the cost).
class SpanRecord(NamedTuple):
    trace_id: int
    span_id: int
    parent_span_id: int | None
    name: str
    kind: Kind
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttrValue]
    events: tuple[SpanEvent, ...] = ()
    status: Status = "UNSET"
    status_message: str | None = None
    session_id: str = ""  # the session the span belongs to (bookkeeping, not exported)

    @property
    def trace_hex(self) -> str:
        return f"{self.trace_id:032x}"

    @property
    def span_hex(self) -> str:
        return f"{self.span_id:016x}"
