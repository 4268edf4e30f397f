"""What a Claude message cost, from the price table kept as data (``prices.json``; pure).

A model the table does not know is *unpriced*: its cost is ``None``, never 0, so a total can say
how much of it is missing. Cache writes are priced by how long they are kept (5 minutes or one
hour); a line that does not split them is priced as 5-minute writes, the API's default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["Price", "Usage", "cost_of", "price_for", "price_table"]

_DATE = re.compile(r"-\d{8}$")
_PER = 1_000_000.0


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float


@dataclass(frozen=True)
class Usage:
    """Tokens of one message: ``input`` excludes cache reads and writes, as the API counts it."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@lru_cache(maxsize=1)
def price_table() -> dict[str, Price]:
    raw: Mapping[str, Any] = json.loads(
        resources.files("archiver.claude").joinpath("prices.json").read_text()
    )
    return {name: Price(**p) for name, p in raw["models"].items()}


def price_for(model: str | None, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: its own entry, else the longest listed prefix; None when unknown."""
    if not model:
        return None
    table = price_table() if table is None else table
    name = _DATE.sub("", model.strip().lower().removeprefix("anthropic/"))
    if name in table:
        return table[name]
    best = max(
        (k for k in table if name.startswith(k + "-") or name.startswith(k + "@")), key=len, default=None
    )
    return table[best] if best else None


def cost_of(model: str | None, usage: Usage, table: Mapping[str, Price] | None = None) -> float | None:
    """US dollars for ``usage`` at ``model``'s list price; None when the model is unpriced."""
    p = price_for(model, table)
    if p is None:
        return None
    return (
        usage.input * p.input
        + usage.output * p.output
        + usage.cache_read * p.cache_read
        + usage.cache_write_5m * p.cache_write_5m
        + usage.cache_write_1h * p.cache_write_1h
    ) / _PER
