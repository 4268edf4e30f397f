"""One group of a window's spend (`spend_read`): its keys, tokens by kind, cost and count.

A record's keys are the source and the finest grouping the Costs page folds every view from
(agent, model, driver, day); a key the group was not made on is None. Costs are unrounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from archiver.metrics import TOKEN_KINDS

__all__ = ["FINE_KEYS", "SpendRecord", "fold"]

FINE_KEYS = ("agent", "model", "driver", "day")


@dataclass(frozen=True, slots=True)
class SpendRecord:
    source: str
    agent: str | None
    model: str | None
    driver: str | None
    day: str | None
    input: int
    output: int
    reasoning: int
    cache_read: int
    cache_write: int
    cost_usd: float
    count: int

    def key(self, name: str) -> str | None:
        """The value of the group key `name` (one of `FINE_KEYS`)."""
        value: str | None = getattr(self, name)
        return value

    def tokens(self) -> dict[str, int]:
        """Tokens by kind (`TOKEN_KINDS` order)."""
        return {k: getattr(self, k) for k in TOKEN_KINDS}

    def only(self, keys: Sequence[str]) -> SpendRecord:
        """This record with the keys not in `keys` cleared."""
        return replace(
            self,
            agent=self.agent if "agent" in keys else None,
            model=self.model if "model" in keys else None,
            driver=self.driver if "driver" in keys else None,
            day=self.day if "day" in keys else None,
        )

    def plus(self, other: SpendRecord) -> SpendRecord:
        """Both records' sums, under this one's keys."""
        return replace(
            self,
            **{k: getattr(self, k) + getattr(other, k) for k in TOKEN_KINDS},
            cost_usd=self.cost_usd + other.cost_usd,
            count=self.count + other.count,
        )


def fold(records: Sequence[SpendRecord], keys: Sequence[str]) -> list[SpendRecord]:
    """Records summed down to (source, *keys), most expensive first."""
    out: dict[tuple[str | None, ...], SpendRecord] = {}
    for r in records:
        group = (r.source, *(r.key(k) for k in keys))
        acc = out.get(group)
        out[group] = r.only(keys) if acc is None else acc.plus(r)

    def order(r: SpendRecord) -> tuple[object, ...]:
        return (-r.cost_usd, r.source, *((r.key(k) is None, str(r.key(k))) for k in keys))

    return sorted(out.values(), key=order)
