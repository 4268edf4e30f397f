"""Ingested input through the archiver's redactor, before it is stored.

Cycles, heartbeats, agent runs and imported rows carry free text (`error_kind`, `meta`, `task`,
labels, a Claude result) that may hold a token or a password; the same `Redactor` that cleans
archives cleans them, with the same keyed placeholders. Text fields and JSON objects go through
it in one pass; numbers, times and flags are left as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

from pydantic import BaseModel

from archiver.cut import cut
from archiver.redact import Redactor, load_key, secret_values
from telemetry.settings import Settings

if TYPE_CHECKING:  # an import builds its redactor before it loads the store's models
    from sqlmodel import SQLModel

__all__ = ["clip_to_columns", "redact_model", "redactor_for"]

M = TypeVar("M", bound=BaseModel)
C = TypeVar("C", bound=Mapping[str, object])  # a row's column values, of whatever type they are


def redactor_for(settings: Settings, extra_values: Iterable[str] = ()) -> Redactor:
    """Configured values (setting, file, extra) and the HMAC key kept in the data folder."""
    values = secret_values(settings.redact_values, settings.redact_file) + list(extra_values)
    return Redactor(load_key(settings.redact_key), values)


def clip_to_columns(values: C, table: type[SQLModel]) -> C:
    """A placeholder is longer than a short secret: cut text to its column's length, so the
    redacted value still fits where the validated one did."""
    lengths = _lengths(table)
    out = dict(values)
    for name, v in values.items():
        length = lengths.get(name)
        if length is not None and isinstance(v, str) and len(v) > length:
            out[name] = cut(v, length)  # text for text; never through a placeholder
    return cast(C, out)


@functools.cache
def _lengths(table: type[SQLModel]) -> dict[str, int]:
    """The length of each of `table`'s text columns that has one (read once: every ingested
    row is clipped to them)."""
    columns = table.__table__.c  # type: ignore[attr-defined]
    return {c.name: c.type.length for c in columns if getattr(c.type, "length", None) is not None}


@functools.cache
def _field_names(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(model.model_fields)


def redact_model(redactor: Redactor, model: M, table: type[SQLModel]) -> M:
    """A copy of the validated `model` with its text fields redacted and cut to the lengths of
    `table`'s columns of the same names (not validated again)."""
    texts = {n: v for n in _field_names(type(model)) if isinstance(v := getattr(model, n), str | list | dict)}
    if not texts:
        return model.model_copy()
    clean, _ = redactor.redact_obj(texts)
    return model.model_copy(update=clip_to_columns(clean, table))
