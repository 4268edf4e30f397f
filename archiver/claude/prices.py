"""What a Claude message cost: the user's price file first, else ``genai-prices`` (pure).

``genai-prices`` is pydantic's maintained price database (dated prices, cache reads, 5-minute and
1-hour cache writes, context tiers) with its data embedded in the package: only the bundled
snapshot is read, never its auto-update, so pricing makes no network call. A model neither knows
is *unpriced*: its cost is ``None``, never 0 and never the price of a model whose name it starts
with, so a total can say how much of it is missing. A private or gateway model is priced by a
user price file (setting ``price_file``): JSON ``{"models": {name: {input, output, cache_read,
cache_write_5m, cache_write_1h}}}`` in US dollars per million tokens, matched by exact name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypedDict

__all__ = [
    "Price",
    "PriceSource",
    "Usage",
    "cost_of",
    "price_key",
    "price_source",
    "priced",
    "use_price_file",
    "user_prices",
]

_DATE = re.compile(r"-\d{8}$")
_PER = 1_000_000.0
_ENV = "OCTEL_PRICE_FILE"  # read by worker processes, which do not get the settings


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


def use_price_file(path: Path | str | None) -> None:
    """Price by ``path`` (a user price file) from now on, here and in worker processes."""
    if path:
        os.environ[_ENV] = str(path)
    else:
        os.environ.pop(_ENV, None)


@lru_cache(maxsize=4)
def _read_price_file(path: str, _stamp: tuple[int, int]) -> dict[str, Price]:
    raw: Mapping[str, Any] = json.loads(Path(path).read_text())
    models = raw.get("models") if isinstance(raw, Mapping) else None
    if not isinstance(models, Mapping):
        raise ValueError(f"{path}: price file needs a 'models' object")
    return {str(name).lower(): Price(**p) for name, p in models.items()}


def user_prices() -> dict[str, Price]:
    """The user price file's models by lower-case name; empty when no file is set."""
    path = os.environ.get(_ENV)
    if not path:
        return {}
    try:
        st = Path(path).stat()  # read again when it changes
        return _read_price_file(path, (st.st_mtime_ns, st.st_size))
    except (OSError, ValueError, TypeError):  # unreadable: its models are named unpriced
        return {}


@lru_cache(maxsize=1)
def _genai_version() -> str:
    return version("genai-prices")


def price_key() -> str:
    """What prices change with: genai-prices' version and the user price file's bytes. An
    import whose state was kept under another key reads (and so prices) every session again."""
    path = os.environ.get(_ENV)
    try:
        own = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else ""
    except OSError:
        own = "unreadable"
    return f"genai-prices {_genai_version()} {own}".strip()


class PriceSource(TypedDict):
    """What prices an archive: genai-prices at a version, and whether a price file was read."""

    source: str
    version: str
    price_file: bool


def price_source() -> PriceSource:
    """What prices an archive: kept with each Claude Code root as ``cost_check.prices``."""
    return {"source": "genai-prices", "version": _genai_version(), "price_file": bool(user_prices())}


def _own(model: str, table: Mapping[str, Price], usage: Usage) -> float | None:
    name = model.strip().lower()
    p = table.get(name) or table.get(_DATE.sub("", name))
    if p is None:
        return None
    return (
        usage.input * p.input
        + usage.output * p.output
        + usage.cache_read * p.cache_read
        + usage.cache_write_5m * p.cache_write_5m
        + usage.cache_write_1h * p.cache_write_1h
    ) / _PER


_FIELDS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok")


@dataclass(frozen=True)
class _Tiered:
    """Context-tiered prices (genai-prices' ``TieredPrices``, a cliff: past a tier's start in
    input tokens, cache included, every token of the message is at that tier's price), per
    token kind of ``_FIELDS``: its base price and its tiers, highest start first."""

    kinds: tuple[tuple[float, tuple[tuple[int, float], ...]], ...]

    def cost(self, usage: Usage) -> float:
        """What ``calc_price`` says, reckoned in floats like a flat price."""
        context = usage.input + usage.cache_read + usage.cache_write
        counts = (usage.input, usage.output, usage.cache_read, usage.cache_write_5m, usage.cache_write_1h)
        total = 0.0
        for (base, tiers), count in zip(self.kinds, counts, strict=True):
            price = next((p for start, p in tiers if context > start), base)
            total += count * price
        return total / _PER


@lru_cache(maxsize=1024)
def _flat(ref: str, day: str | None, provider: str = "anthropic") -> Price | _Tiered | bool:
    """The price per token kind genai-prices gives ``ref`` on ``day``: one per kind, or per
    context tier; True when its prices are partial or of another shape (every message is then
    priced by ``calc_price`` itself, about 400 us where this is 2); False when it does not know
    the model."""
    from decimal import Decimal

    from genai_prices.data_snapshot import get_snapshot
    from genai_prices.types import TieredPrices

    try:
        _, model = get_snapshot().find_provider_model(ref, None, provider, None)
    except LookupError:
        return False
    prices = model.get_prices(_when(day) or datetime.now(tz=UTC))
    got = [getattr(prices, f, None) for f in _FIELDS]
    if all(isinstance(v, Decimal) for v in got):
        return Price(*(float(v or 0) for v in got))
    if not all(isinstance(v, Decimal | TieredPrices) for v in got):
        return True
    kinds: list[tuple[float, tuple[tuple[int, float], ...]]] = []
    for v in got:
        if isinstance(v, TieredPrices):
            tiers = sorted(((int(t.start), float(t.price)) for t in v.tiers), reverse=True)
            kinds.append((float(v.base), tuple(tiers)))
        elif isinstance(v, Decimal):
            kinds.append((float(v), ()))
    return _Tiered(tuple(kinds))


def _when(day: str | None) -> datetime | None:
    return datetime.fromisoformat(day).replace(tzinfo=UTC) if day else None


def _genai(model: str, usage: Usage, day: str | None, provider: str = "anthropic") -> float | None:
    refs = (model, model.removeprefix("anthropic/")) if provider == "anthropic" else (model,)
    for ref in dict.fromkeys(refs):
        flat = _flat(ref, day, provider)
        if flat is False:
            continue
        if isinstance(flat, Price):
            return _own(ref, {ref.lower(): flat}, usage)
        if isinstance(flat, _Tiered):
            return flat.cost(usage)
        return _calc(ref, usage, day, provider)
    return None


def _calc(ref: str, usage: Usage, day: str | None, provider: str = "anthropic") -> float:
    from genai_prices import Usage as GUsage
    from genai_prices import calc_price

    use = GUsage(
        # genai-prices counts cache reads and writes inside the input
        input_tokens=usage.input + usage.cache_read + usage.cache_write,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        cache_write_5m_tokens=usage.cache_write_5m,
        cache_write_1h_tokens=usage.cache_write_1h,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = calc_price(use, ref, provider_id=provider, genai_request_timestamp=_when(day))
    return float(got.total_price)


def cost_of(
    model: str | None,
    usage: Usage,
    table: Mapping[str, Price] | None = None,
    at_ms: float | None = None,
) -> float | None:
    """US dollars for ``usage`` at ``model``'s price when the message was written (``at_ms``,
    for dated prices): the user price file's (or ``table``'s), else genai-prices'; None when
    neither knows the model."""
    if not model or not isinstance(model, str):
        return None
    own = _own(model, user_prices() if table is None else table, usage)
    if own is not None or table is not None:
        return own
    day = datetime.fromtimestamp(at_ms / 1000.0, UTC).date().isoformat() if at_ms else None
    try:
        return _genai(model.strip(), usage, day)
    except (ValueError, OverflowError):  # usage genai-prices refuses: priced as unknown
        return None


def priced(
    names: tuple[str, ...], usage: Usage, provider: str | None, at_ms: float | None = None
) -> tuple[float | None, str]:
    """(cost, what priced it) for a message of a provider other than Claude Code's: the user
    price file by the first of ``names`` it lists (``"provider/model"``, then ``"model"``),
    else genai-prices under ``provider``'s own prices (a provider genai-prices does not list
    prices nothing: a gateway's or a private server's model is not charged at another
    provider's price); ``(None, "unpriced")`` when neither knows it."""
    table = user_prices()
    for name in names:
        own = _own(name, table, usage)
        if own is not None:
            return own, "price-file"
    if not provider or not names:
        return None, "unpriced"
    day = datetime.fromtimestamp(at_ms / 1000.0, UTC).date().isoformat() if at_ms else None
    got = _genai_once(names[-1].strip(), usage, day, provider)
    return (got, "genai-prices") if got is not None else (None, "unpriced")


@lru_cache(maxsize=16384)  # a few MB at most in a long-running watcher
def _genai_once(model: str, usage: Usage, day: str | None, provider: str) -> float | None:
    """``_genai``, kept: a tree archived again as it grows prices the same answers again, and a
    tiered or partial price costs genai-prices' own reckoning (about 100 us) each time."""
    try:
        return _genai(model, usage, day, provider)
    except (ValueError, OverflowError, LookupError):  # usage or a provider it refuses: unknown
        return None
