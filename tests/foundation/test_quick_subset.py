"""`pytest --quick` (tests/quick.py): the subset leaves out real parts and slow tests, and a
property test draws fewer examples, its own settings kept otherwise; without `--quick`, all."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import quick
from hypothesis import Phase, given, settings
from hypothesis import strategies as st


def _config(on: bool, markexpr: str = "") -> Any:
    return SimpleNamespace(
        getoption=lambda name: on if name == "quick" else None, option=SimpleNamespace(markexpr=markexpr)
    )


def _property(own: int) -> tuple[Any, list[int]]:
    drawn: list[int] = []

    @settings(max_examples=own, database=None, phases=[Phase.generate])
    @given(st.integers())
    def prop(n: int) -> None:
        drawn.append(n)

    return prop, drawn


@pytest.mark.parametrize(("own", "quick_count"), [(500, 100), (100, 20), (30, 6), (15, 5), (3, 3)])
def test_a_property_test_draws_a_fifth_of_its_examples_at_least_five(own: int, quick_count: int) -> None:
    prop, drawn = _property(own)
    items: Any = [SimpleNamespace(obj=prop, nodeid="p[a]"), SimpleNamespace(obj=prop, nodeid="p[b]")]
    quick.fewer_examples(_config(True), items)
    s = prop._hypothesis_internal_use_settings
    assert s.max_examples == quick_count == quick.quick_examples(own)
    assert s.database is None and list(s.phases) == [Phase.generate]  # its own settings kept
    prop()
    assert len(drawn) == quick_count  # what hypothesis ran, not only what the settings say


def test_without_quick_every_example_is_drawn() -> None:
    prop, drawn = _property(40)
    quick.fewer_examples(_config(False), [SimpleNamespace(obj=prop, nodeid="p")])  # type: ignore[list-item]
    prop()
    assert len(drawn) == 40


@pytest.mark.parametrize(
    ("on", "given_expr", "want"),
    [
        (True, "", quick.QUICK_MARKS),
        (True, "postgres", f"(postgres) and {quick.QUICK_MARKS}"),
        (False, "", ""),
        (False, "chromium", "chromium"),
    ],
)
def test_quick_leaves_out_real_parts_and_slow_tests(on: bool, given_expr: str, want: str) -> None:
    config = _config(on, given_expr)
    quick.select(config)
    assert config.option.markexpr == want


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("entry", sorted(quick.SLOW))
def test_each_slow_entry_names_a_test_that_is_there(entry: str) -> None:
    path, _, name = entry.partition("::")
    src = (ROOT / path).read_text(encoding="utf-8")  # a moved file fails here, not silently
    assert "def test_" in src and (not name or f"def {name}(" in src), entry


def test_slow_marks_a_listed_file_or_a_listed_test_with_all_its_parameters() -> None:
    by_file = next(e for e in quick.SLOW if "::" not in e)
    by_name = next(e for e in quick.SLOW if "::" in e)
    ids = [f"{by_file}::test_x", f"{by_name}[a-b]", f"{by_name}_other", "tests/x/test_y.py::test_z"]
    items: Any = [_Item(i) for i in ids]
    quick.mark_slow(items)
    assert [i.slow for i in items] == [True, True, False, False]


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid, self.slow = nodeid, False

    def add_marker(self, mark: Any) -> None:
        self.slow = self.slow or mark.name == "slow"
