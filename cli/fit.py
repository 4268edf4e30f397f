"""Tables that fit the terminal: one line per row, whatever the width.

A column is decisive (always shown), flexible (a title: cut with "…" to what is left) or
secondary, with a rank: when the row does not fit, secondary columns go, least useful first,
before a flexible one is cut below its floor. No cell ever wraps. Piped output (a console far
wider than any row) keeps every column whole: data is not cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["Col", "fit_widths", "fitted_table"]

_FLEX_FLOOR = 20  # a title cut shorter than this says nothing: drop a secondary column first
_EDGE = 3  # each column's padding (1 + 1) and its border; the table adds one more border


@dataclass(frozen=True)
class Col:
    header: str
    right: bool = False
    rank: int = 0  # 0: decisive, never dropped; higher is dropped sooner
    flex: bool = False  # cut with "…" to the width that is left


def fit_widths(cols: Sequence[Col], natural: Sequence[int], width: int) -> list[int | None]:
    """The width each column gets in `width` cells (None: dropped). Pure, so it is property-tested:
    the kept columns always fit when the decisive ones do, and every decisive column is kept."""
    kept = list(range(len(cols)))

    def need(idx: list[int]) -> int:
        return 1 + sum(_EDGE + (min(natural[i], _FLEX_FLOOR) if cols[i].flex else natural[i]) for i in idx)

    for i in sorted((i for i, c in enumerate(cols) if c.rank), key=lambda i: -cols[i].rank):
        if need(kept) <= width:
            break
        kept.remove(i)
    fixed = 1 + sum(_EDGE + (0 if cols[i].flex else natural[i]) for i in kept)
    flex = [i for i in kept if cols[i].flex]
    room = max(0, width - fixed)
    out: list[int | None] = [None] * len(cols)
    for i in kept:
        out[i] = natural[i]
    want = sum(natural[i] for i in flex)
    if flex and want > room:  # share what is left fairly: a short one keeps its all, shortest first
        left, count = room, len(flex)
        for i in sorted(flex, key=lambda i: natural[i]):
            w = max(1, min(natural[i], left // count))
            out[i], left, count = w, left - w, count - 1
    return out


def fitted_table(
    console: Console,
    title: str,
    cols: Sequence[Col],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str] | None = None,
) -> Table:
    """A rich table of `rows` (markup cells) that fits `console` on one line per row; `footer`,
    one cell per column, is a totals line under it (cut and dropped with its column)."""
    from rich.table import Table
    from rich.text import Text

    lines = [*rows, *([footer] if footer is not None else [])]
    natural = [
        max([len(c.header), *(Text.from_markup(r[i]).cell_len for r in lines)]) for i, c in enumerate(cols)
    ]
    widths = fit_widths(cols, natural, console.width)
    table = Table(title=title, title_justify="left", show_footer=footer is not None)
    kept = [i for i, w in enumerate(widths) if w is not None]
    for i in kept:
        c = cols[i]
        table.add_column(
            c.header,
            footer=footer[i] if footer is not None else "",
            justify="right" if c.right else "left",
            no_wrap=True,
            overflow="ellipsis",
            width=widths[i],
        )
    for r in rows:
        table.add_row(*(r[i] for i in kept))
    return table
