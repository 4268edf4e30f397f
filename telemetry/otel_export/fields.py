"""Span attributes written straight as OTLP `KeyValue` fields of a Span (field 9), as bytes (pure).

A span carries some 20-40 attributes; building a dictionary of them and then encoding each entry
cost more than reading the archive the span comes from. Each attribute key is encoded once, with
the fixed bytes of its field for each length of value that fits one byte (most ids, names and
token counts), so writing an attribute is a table look-up and a concatenation:

    Span.attributes (9)  KeyValue  key=1 (string)  value=2 (AnyValue)
    AnyValue             string=1  bool=2  int=3  double=4  array=5

Values that repeat across trees (models, providers, tool and agent names, statuses, finish
reasons) are kept per key (`Key.kept`, at most 256 a key); ids and token counts are written each
time. The kept fields are shared by every thread: a race can only encode a value twice.
`decode` reads the fields back into a dictionary (the span records the tests inspect).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from telemetry.otel_export.spans import AttrValue
from telemetry.otel_export.wire import any_value, varint

__all__ = ["Key", "KeyGroup", "decode"]

_TAG = b"\x4a"  # Span.attributes, length-delimited
_SMALL = [bytes([i]) for i in range(128)]
_D = struct.Struct("<d").pack
_U64 = 0xFFFFFFFFFFFFFFFF
_KEPT = 256  # values kept per key: past it, a key's values are written each time


class Key:
    """One attribute key; its writers return the whole field (b"" for no value where noted)."""

    __slots__ = ("_double", "_false", "_heads", "_kept", "_kp", "_lists", "_true", "int_heads", "name")

    def __init__(self, name: str) -> None:
        raw = name.encode()
        self.name = name
        self._kp = b"\x0a" + varint(len(raw)) + raw  # KeyValue.key
        k = len(self._kp)
        # a string of n bytes: tag, KeyValue length, key, AnyValue tag and length, string tag, n
        self._heads = [
            _TAG + _SMALL[k + n + 4] + self._kp + b"\x12" + _SMALL[n + 2] + b"\x0a" + _SMALL[n]
            for n in range(max(0, 124 - k))
        ]
        # an int of varint length L (1-10 bytes): `int_heads[len(raw)] + raw`
        self.int_heads = [b""] + [
            _TAG + varint(k + 3 + n) + self._kp + b"\x12" + _SMALL[1 + n] + b"\x18" for n in range(1, 11)
        ]
        self._double = _TAG + varint(k + 11) + self._kp + b"\x12\x09\x21"
        self._false = _TAG + varint(k + 4) + self._kp + b"\x12\x02\x10\x00"
        self._true = _TAG + varint(k + 4) + self._kp + b"\x12\x02\x10\x01"
        self._kept: dict[str, bytes] = {}
        self._lists: dict[str, bytes] = {}

    def s(self, value: str) -> bytes:
        """A string attribute (the string may be empty: callers skip those)."""
        return self.utf8(value.encode())

    def utf8(self, raw: bytes) -> bytes:
        """`s` of a string already encoded (one encoding for the keys that carry it)."""
        n = len(raw)
        if n < len(self._heads):
            return self._heads[n] + raw
        av = b"\x0a" + varint(n) + raw
        kv = self._kp + b"\x12" + varint(len(av)) + av
        return _TAG + varint(len(kv)) + kv

    def kept(self, value: str) -> bytes:
        """`s` of a value that repeats (a model, a tool name): its field is kept and reused."""
        got = self._kept.get(value)
        if got is None:
            got = self.s(value)
            if len(self._kept) < _KEPT:
                self._kept[value] = got
        return got

    def i(self, value: int) -> bytes:
        """An int64 attribute (a negative one as two's complement, as protobuf writes it)."""
        raw = varint(value & _U64) if value >= 0x80 or value < 0 else _SMALL[value]
        return self.int_heads[len(raw)] + raw

    @property
    def double_head(self) -> bytes:
        """A double attribute's field is these bytes and the value's 8 (little-endian)."""
        return self._double

    def f(self, value: float) -> bytes:
        return self._double + _D(value)

    def b(self, value: bool) -> bytes:
        return self._true if value else self._false

    def put(self, value: object, keep: bool = False) -> bytes:
        """A value from a document, if it says something: nothing for None or "", else `v`.
        ``keep``: a string that repeats (`kept`)."""
        if type(value) is str:  # the common case, first
            if not value:
                return b""
            return self.kept(value) if keep else self.s(value)
        return b"" if value is None else self.v(value)

    def v(self, value: object) -> bytes:
        """Any value: a str, bool, int, float or list as it is, anything else as its str()."""
        t = type(value)
        if t is str:
            return self.s(value)  # type: ignore[arg-type]
        if t is bool:
            return self.b(value)  # type: ignore[arg-type]
        if t is int:
            return self.i(value)  # type: ignore[arg-type]
        if t is float:
            return self.f(value)  # type: ignore[arg-type]
        if not isinstance(value, str | bool | int | float | list):
            return self.s(str(value))
        return self._any(value)

    def _any(self, value: AttrValue) -> bytes:
        av = any_value(value)
        kv = self._kp + b"\x12" + varint(len(av)) + av
        return _TAG + varint(len(kv)) + kv

    def one_string_list(self, value: str) -> bytes:
        """A list of one string (a finish reason, which repeats: kept as `kept` keeps)."""
        got = self._lists.get(value)
        if got is None:
            got = self._any([value])
            if len(self._lists) < _KEPT:
                self._lists[value] = got
        return got


class KeyGroup:
    """Keys that carry one value (a turn's model: request, response and OpenInference's model
    name): the fields of a value that repeats are written once and kept."""

    __slots__ = ("_kept", "_keys")

    def __init__(self, *keys: Key) -> None:
        self._keys = keys
        self._kept: dict[object, bytes] = {}

    def put(self, value: object) -> bytes:
        """`Key.put` of the value to each key, in order (a string kept)."""
        got = self._kept.get(value) if type(value) is str else None
        if got is None:
            got = b"".join(k.put(value, keep=True) for k in self._keys)
            if type(value) is str and len(self._kept) < _KEPT:
                self._kept[value] = got
        return got


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of a protobuf message's fields."""
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i : i + n], i + n
        else:
            raise ValueError(f"wire type {wire} in an attribute")
        out.append((number, wire, value))
    return out


def _value(av: bytes) -> AttrValue:
    (number, _, raw), *_ = _fields(av) or [(1, 2, b"")]
    convert: dict[int, Callable[[Any], Any]] = {
        1: lambda v: v.decode(),
        2: bool,
        3: lambda v: v - (1 << 64) if v >> 63 else v,
        4: lambda v: struct.unpack("<d", v)[0],
        5: lambda v: [_value(x) for n, _, x in _fields(v) if n == 1],
    }
    return convert[number](raw)  # type: ignore[no-any-return]


def decode(data: bytes) -> dict[str, AttrValue]:
    """The attributes of Span fields written by `Key` (field 9 each), in order."""
    out: dict[str, AttrValue] = {}
    for number, _, kv in _fields(data):
        if number != 9:
            raise ValueError(f"field {number} is not an attribute")
        parts = {n: v for n, _, v in _fields(kv)}
        out[parts.get(1, b"").decode()] = _value(parts.get(2, b""))
    return out
