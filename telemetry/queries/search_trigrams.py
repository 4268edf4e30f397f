"""Which runs of three characters of a search text to ask a text index for.

Every row holding a text holds each of its runs of three characters, so any of them finds a
superset of the matches; the fewer rows a run is on, the cheaper the index answers. Both text
indexes (SQLite's FTS5 trigram table, PostgreSQL's GIN of `octel_trigrams`) read the list of
every run they are asked for, so asking for all of a phrase's runs costs the sum of their lists:
30-200 ms for a phrase of common words at 1,000,000 sessions, against 1-3 ms for its two rarest.
Without statistics of its own, the choice goes by shape: a run spanning two words side by side
("h t" in "crash timeout") is on few rows even when both words are common, a digit is rarer than
a letter, punctuation rarer than a letter; among equals the first and the last are taken, as
they overlap least.

Pure: positions in the text, which the caller turns into runs of `lower(q)` as its database
lowers it.
"""

from __future__ import annotations

__all__ = ["RUNS", "rare_runs"]

# At most this many runs are asked for: two rare ones already narrow a phrase to a few rows.
RUNS = 3


def _rank(run: str) -> int:
    if run[0].isalnum() and not run[1].isalnum() and run[2].isalnum():
        return 0  # two words side by side
    if any(ch.isdigit() for ch in run):
        return 1
    if not run.isalnum():
        return 2
    return 3


def rare_runs(q: str) -> list[int]:
    """Positions of the runs of three characters of `q` likeliest to be on few rows, rarest
    kind first: every run across two words (up to `RUNS`); with fewer than two, runs with a
    digit; with none yet, the first and the last run of the next kind found. Each run asked
    for adds its whole list to the index's work, so a run across words is not joined by a
    common one ("parser refactor": "r r" alone, 3.8 ms; with "er ", 9 ms). Each position
    names a distinct run of `q.lower()`; none for a text shorter than three characters."""
    low = q.lower()
    if len(low) != len(q) or len(q) < 3:  # lowering moved the characters: ask for none
        return []
    first: dict[str, int] = {}
    for i in range(len(q) - 2):
        first.setdefault(low[i : i + 3], i)
    by_rank: dict[int, list[int]] = {}
    for run, i in first.items():
        by_rank.setdefault(_rank(run), []).append(i)
    picked = by_rank.pop(0, [])[:RUNS]
    for rank in sorted(by_rank):
        if len(picked) >= 2 or (picked and rank > 1):  # letters and punctuation: long lists
            break
        found = by_rank[rank]
        picked += ([found[0], found[-1]] if len(found) > 1 else found)[: 2 - len(picked)]
    return sorted(picked)
