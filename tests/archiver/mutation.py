"""Hypothesis example counts, smaller while mutmut runs a mutant (MUTANT_UNDER_TEST is set):
each surviving mutant runs the whole redaction suite, and the examples kill most mutants early."""

from __future__ import annotations

import os

__all__ = ["examples"]


def examples(n: int) -> int:
    return min(n, 40) if os.environ.get("MUTANT_UNDER_TEST") else n
