"""The words octel understands in a cycle's `terminal_state`, `worker_outcome` and
`error_kind`, declared once: `octel why`, `octel prune --keep-failures` and the cycle
failure-ratio alert read them from here (README "Cycle vocabulary" lists them; a test keeps
the alert rules, the dashboard and the README in step).

Matching is by word part, case-insensitive, so `worker_timeout` is a timeout and `crashed` a
failure. Anything else (`done`, `merged`, `skipped`, `no_candidates`, ...) is a clean finish.
"""

from __future__ import annotations

import re

__all__ = [
    "ABORT_WORDS",
    "FAILED_TERMINAL_STATES",
    "FAILURE_WORDS",
    "LIKE_PATTERNS",
    "TIMEOUT_WORDS",
    "aborted",
    "failed",
    "timed_out",
]

# `octel why` says "timed out" when the state, outcome or error kind contains one of these.
# (`_` stands for "_", "-", " " or nothing: time_out matches timeout, time-out and time out.)
TIMEOUT_WORDS = ("time_out", "timed_out", "deadline", "time_limit", "wall_clock")
# ... "aborted" for these ...
ABORT_WORDS = ("abort", "cancel", "kill", "interrupt", "sigterm", "sigint")
# ... and "error" for these (or any error_kind at all).
FAILURE_WORDS = ("fail", "error", "crash", "exception", "broken")
# The terminal states the failure-ratio alert and the dashboard count as failed (exact match:
# a Prometheus label regex), every one of them also a failure, timeout or abort above.
FAILED_TERMINAL_STATES = ("failed", "error", "errored", "crashed", "timeout", "timed_out", "aborted")


# The same words as SQL LIKE patterns (`_` is LIKE's one-character wildcard), for queries that
# must run in the database: a failure, a timeout or an abort.
LIKE_PATTERNS = tuple(f"%{w}%" for w in (*FAILURE_WORDS, *TIMEOUT_WORDS, *ABORT_WORDS))


def _any(words: tuple[str, ...]) -> re.Pattern[str]:
    alts = "|".join(re.escape(w).replace("_", "[_ -]?").replace(r"\ ", "[_ -]?") for w in words)
    return re.compile(alts, re.I)


_TIMEOUT, _ABORT, _FAILURE = _any(TIMEOUT_WORDS), _any(ABORT_WORDS), _any(FAILURE_WORDS)


def timed_out(text: str) -> bool:
    return _TIMEOUT.search(text) is not None


def aborted(text: str) -> bool:
    return _ABORT.search(text) is not None


def failed(text: str) -> bool:
    """A failure, a timeout or an abort: what `prune --keep-failures` keeps."""
    return any(p.search(text) is not None for p in (_FAILURE, _TIMEOUT, _ABORT))
