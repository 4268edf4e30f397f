"""archiver.shape reads any JSON value as the shape asked for, and never raises."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from hypothesis import example, given
from hypothesis import strategies as st

from archiver.shape import as_num, as_obj, as_text, text_or_none

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def _fits_a_float(v: int) -> bool:
    try:
        float(v)
    except OverflowError:
        return False
    return True


@given(JSON | st.integers(min_value=2**1000, max_value=2**1100))
@example(2**1000 + 1)  # a float holds it only rounded
@example(float("nan"))
def test_each_reader_gives_its_shape_or_the_neutral_one(v: object) -> None:
    obj = as_obj(v)
    assert isinstance(obj, Mapping)
    assert obj is v if isinstance(v, dict) else obj == {}
    assert as_text(v) == (v if isinstance(v, str) else "")
    assert text_or_none(v) == (v if isinstance(v, str) else None)
    n = as_num(v)
    no_number = isinstance(v, bool) or not isinstance(v, int | float)
    if no_number or (isinstance(v, int) and not _fits_a_float(v)):
        assert n is None
    else:
        assert isinstance(n, float)
        assert (math.isnan(n) and math.isnan(v)) or n == float(v)  # a big integer, rounded


def test_a_bool_is_no_number_and_a_list_no_object() -> None:
    doc = json.loads('{"n": true, "o": [1, 2], "s": 5}')
    assert as_num(doc["n"]) is None
    assert as_obj(doc["o"]) == {}
    assert as_text(doc["s"]) == "" and text_or_none(doc["s"]) is None
    assert as_num(json.loads("1" + "0" * 400)) is None
