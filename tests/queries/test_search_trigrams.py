"""The runs of three characters a search asks the text index for are runs of the text itself, so
every row holding the text holds them; the rarest-looking kinds come first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.search_trigrams import RUNS, rare_runs


@given(st.text(max_size=30))
def test_runs_are_distinct_runs_of_the_lowered_text(q: str) -> None:
    runs = [q.lower()[i : i + 3] for i in rare_runs(q)]
    assert all(len(r) == 3 and r in q.lower() for r in runs)
    assert len(set(runs)) == len(runs) <= RUNS
    if len(q) >= 3 and len(q.lower()) == len(q):
        assert runs  # a text the index can answer always gets runs to ask for


def _runs(q: str) -> list[str]:
    return [q.lower()[i : i + 3] for i in rare_runs(q)]


def test_runs_across_words_come_first_and_alone() -> None:
    assert _runs("crash timeout memory") == ["h t", "t m"]
    assert _runs("Parser Refactor") == ["r r"]  # not joined by the common "er "


def test_a_digit_joins_a_lone_run_across_words_and_a_word_gives_its_ends() -> None:
    assert _runs("flaky-42") == ["y-4", "-42"]
    assert _runs("parser") == ["par", "ser"]
    assert _runs("ab") == []
