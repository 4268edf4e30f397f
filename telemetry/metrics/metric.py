"""One metric's declaration: its name, kind, help, labels and where its value comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Kind", "Metric", "Source"]

Kind = Literal["counter", "gauge", "histogram"]
Source = Literal["aggregate", "store", "process"]


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]
    source: Source
    # A label whose every value is shown (at 0 until it moves) once any series of the metric's
    # other labels exists, so `increase()` sees the first event instead of a new series.
    fill: tuple[str, tuple[str, ...]] | None = None

    @property
    def aggregate_key(self) -> str:
        """The `aggregates.COUNTERS` key (histograms: the stem of `_bucket`, `_sum`, `_count`)."""
        return self.name.removeprefix("octel_")
