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

__all__ = ["AttrValue", "SpanEvent", "SpanRecord", "span_id", "span_id_bytes", "span_ids", "trace_id"]

AttrValue = str | bool | int | float | Sequence[str]
Kind = Literal["INTERNAL", "CLIENT"]
Status = Literal["UNSET", "OK", "ERROR"]
_NO_ATTRIBUTES: Mapping[str, AttrValue] = MappingProxyType({})
_ZERO, _ONE = bytes(8), (1).to_bytes(8, "big")  # span id 0 means "no span": 1 instead


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode()).digest()


def trace_id(root_session_id: str) -> int:
    """128-bit trace id of a session tree (never 0, which OTLP reads as "no trace")."""
    return int.from_bytes(_digest("octel-trace", root_session_id)[:16], "big") or 1


def span_id(root_session_id: str, key: str) -> int:
    """64-bit span id of one element (``key``) of a tree (never 0)."""
    return int.from_bytes(_digest("octel-span", root_session_id, key)[:8], "big") or 1


def span_ids(root_session_id: str, keys: Iterable[str]) -> dict[str, int]:
    """`span_id` of each key of one tree."""
    return {k: int.from_bytes(v, "big") for k, v in span_id_bytes(root_session_id, keys).items()}


def span_id_bytes(root_session_id: str, keys: Iterable[str]) -> dict[str, bytes]:
    """`span_id` of each key of one tree, as its 8 bytes (big-endian, as OTLP carries it). One
    hash of the prefix and the key each: cheaper than copying a hash of the prefix."""
    prefix = f"octel-span\x1f{root_session_id}\x1f".encode()
    sha256 = hashlib.sha256
    out = {}
    for key in keys:
        got = sha256(prefix + key.encode()).digest()[:8]
        out[key] = got if got != _ZERO else _ONE
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
