"""`groupings`: how `octel costs --by` and `/api/costs?by=` read the groupings asked for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.costs import GROUP_KEYS
from telemetry.queries.costs_answer import groupings

_ITEM = st.lists(st.sampled_from([*GROUP_KEYS, " ", ""]), max_size=6).map(",".join)


@given(st.lists(_ITEM, max_size=4))
def test_each_key_once_in_the_order_first_asked(items: list[str]) -> None:
    asked = [k.strip() for item in items for k in item.split(",") if k.strip()]
    assert groupings(items) == list(dict.fromkeys(asked))


def test_none_asked_is_every_grouping() -> None:
    assert groupings(None) == list(GROUP_KEYS)


@given(st.text(min_size=1).filter(lambda t: t.strip() and "," not in t and t.strip() not in GROUP_KEYS))
def test_a_key_that_is_not_a_grouping_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot group by"):
        groupings(["agent", f"model,{bad}"])
