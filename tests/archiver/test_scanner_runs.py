"""The scanner's fast region finder gives exactly the spans of the region pattern's own search."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.rules import builtin_rules
from archiver.scanner import class_runs

# bytes inside and outside the AWS-secret class, and the JSON escapes around them
_ALPHABET = b'aZ09/+=-\\"n _'


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(list(_ALPHABET)), max_size=200).map(bytes),
    st.integers(min_value=1, max_value=12),
    st.sampled_from([rb"[A-Za-z0-9/+]", rb"[^\"\\]", rb"[a-z]"]),
)
def test_class_runs_equal_finditer(text: bytes, n: int, cls: bytes) -> None:
    pattern = cls + b"{%d,}" % n
    runs = class_runs(pattern)
    assert runs is not None
    assert runs(text) == [m.span() for m in re.finditer(pattern, text)]


def test_every_builtin_region_pattern_takes_the_fast_path() -> None:
    regions = [r.regions for r in builtin_rules() if r.regions]
    assert regions
    assert all(class_runs(r) is not None for r in regions)


def test_other_patterns_keep_the_regex() -> None:
    assert class_runs(rb"[a-z]{3}") is None
    assert class_runs(rb"x[a-z]{3,}") is None
