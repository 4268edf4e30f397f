"""Is a document an archive octel can store and index? Its version's JSON Schema
(``schemas/archive-v<N>.json``), then the bounds the schema leaves open: counts that fit a
64-bit integer, finite costs, times between 1970 and 9999, session ids that fit the index's
columns (200 characters, no NUL: PostgreSQL refuses both). ``check_archive`` raises
``ArchiveInvalid`` naming the first field that is wrong."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from archiver.cut import cut
from archiver.shape import RawJson

__all__ = ["SCHEMAS", "ArchiveInvalid", "check_archive", "schema_of"]

SCHEMAS = Path(__file__).resolve().parent / "schemas"
_MAX_INT = 2**63 - 1
_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
_MAX_COST = 1e12
_IDS = ("session_id", "root_session_id", "parent_session_id")
_MAX_ID = 200  # the index's id columns


class ArchiveInvalid(ValueError):
    """The document is not a valid archive; the message names the field."""


@functools.lru_cache(maxsize=8)
def schema_of(version: int) -> RawJson:
    """The JSON Schema of archive version ``version``."""
    path = SCHEMAS / f"archive-v{version}.json"
    if not path.is_file():
        raise ArchiveInvalid(f"schema_version: no schema for version {version}")
    out: RawJson = orjson.loads(path.read_bytes())
    return out


@functools.lru_cache(maxsize=8)
def _validator(version: int) -> Any:
    # the Rust validator: about 20 times faster than the pure-Python one on an archive's
    # message list, which every write reads back
    import jsonschema_rs

    return jsonschema_rs.validator_for(schema_of(version))


def _where(path: Iterator[Any] | Any) -> str:
    return ".".join(str(p) for p in path) or "(document)"


def _numbers(doc: Mapping[str, Any]) -> Iterator[tuple[Any, Any, str, Any]]:
    """(where, key, kind, value) of the numbers the index reads; ``where`` names the field
    with ``key`` only when one is reported (``_field``), not for each of the thousands checked."""
    blocks: list[tuple[Any, Any]] = [("totals", doc.get("totals")), ("subtree", doc.get("subtree"))]
    blocks += [(("per_turn", i), t) for i, t in enumerate(doc.get("per_turn") or [])]
    for name, block in blocks:
        if not isinstance(block, Mapping):
            continue
        for k, v in block.items():
            yield name, k, "cost" if k == "cost" else "time" if k in _TIMES else "count", v
        tokens = block.get("tokens")
        for k, v in tokens.items() if isinstance(tokens, Mapping) else ():
            yield (name, "tokens"), k, "count", v
    session = doc.get("session")
    stime = session.get("time") if isinstance(session, Mapping) else None
    for k in ("created", "updated"):
        if isinstance(stime, Mapping) and k in stime:
            yield ("session", "time"), k, "time", stime[k]
    yield "", "depth", "count", doc.get("depth")


def _field(where: Any, key: Any) -> str:
    def flat(x: Any) -> Iterator[str]:
        if isinstance(x, tuple):
            for y in x:
                yield from flat(y)
        elif x != "":
            yield str(x)

    return ".".join(flat((where, key)))


_TIMES = frozenset({"created", "completed", "duration_ms", "first_created", "last_activity"})


def _bad_number(value: Any, kind: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None  # the schema has judged the type
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number"
    if kind == "count" and not -_MAX_INT - 1 <= value <= _MAX_INT:
        return "does not fit a 64-bit integer"
    if kind == "cost" and abs(value) > _MAX_COST:
        return f"is a cost above {_MAX_COST:g}"
    if kind == "time" and not 0 <= value <= _MAX_MS:
        return "is a time outside 1970-9999 (milliseconds)"
    return None


def check_archive(doc: Any) -> None:
    """Raise ``ArchiveInvalid`` unless ``doc`` is a valid archive of its version."""
    if not isinstance(doc, Mapping):
        raise ArchiveInvalid("(document): not an object")
    version = doc.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ArchiveInvalid(f"schema_version: {version!r} is not a version number")
    error = next(iter(_validator(version).iter_errors(doc)), None)
    if error is not None:
        raise ArchiveInvalid(f"{_where(error.instance_path)}: {cut(error.message, 200)}")
    for where, key, kind, value in _numbers(doc):
        if type(value) is int and kind == "count" and -_MAX_INT - 1 <= value <= _MAX_INT:
            continue  # the common case, without a call
        why = _bad_number(value, kind)
        if why is not None:
            raise ArchiveInvalid(f"{_field(where, key)}: {value!r} {why}")
    for field in _IDS:
        value = doc.get(field)
        if isinstance(value, str) and ("\x00" in value or len(value) > _MAX_ID):
            raise ArchiveInvalid(f"{field}: must be at most {_MAX_ID} characters, without NUL")
