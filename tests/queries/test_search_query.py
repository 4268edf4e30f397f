"""The search language parses every string, and what it prints parses back to the same query."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.search_query import FILTER_KEYS, SearchQuery, Term, parse_query, render_query

ANY = st.text(st.sampled_from('ab :*"\t-._é'), max_size=24) | st.text(max_size=24)
WORD = st.text("abcXYZ019-._/é", min_size=1, max_size=8)


@given(ANY)
def test_every_string_parses_to_nonempty_terms_and_known_filters(q: str) -> None:
    got = parse_query(q)
    assert all(t.text and t.text.strip() for t in got.terms)
    assert all(k in FILTER_KEYS and v and v == v.strip() for k, v in got.filters)
    assert all(not any(c.isspace() for c in t.text) for t in got.terms if t.kind != "phrase")


@given(ANY)
def test_printing_a_parsed_query_gives_it_back(q: str) -> None:
    got = parse_query(q)
    assert parse_query(render_query(got)) == got


@given(
    st.lists(st.tuples(st.sampled_from(["word", "phrase", "prefix"]), WORD), max_size=4),
    st.lists(st.tuples(st.sampled_from(FILTER_KEYS), WORD | st.just("two words")), max_size=3),
)
def test_a_query_built_from_parts_is_read_as_those_parts(
    terms: list[tuple[str, str]], filters: list[tuple[str, str]]
) -> None:
    words = [Term(t, k) for k, t in terms]  # type: ignore[arg-type]
    built = SearchQuery(tuple(words), tuple(filters))
    got = parse_query(render_query(built))
    assert got.terms == built.terms and got.filters == built.filters


def test_the_forms_an_operator_types() -> None:
    got = parse_query('"git push --force" tool:bash agent:build since:7d ECONN*')
    assert got.terms == (Term("git push --force", "phrase"), Term("ECONN", "prefix"))
    assert got.filter("tool") == "bash" and got.filter("agent") == "build" and got.filter("since") == "7d"
    assert parse_query('source:claude_code model:"claude sonnet"').filters == (
        ("source", "claude_code"),
        ("model", "claude sonnet"),
    )


def test_one_bare_token_may_be_an_id() -> None:
    assert parse_query("ses_4f2a9").maybe_id == "ses_4f2a9"
    assert (
        parse_query(" 0b5a4c9e-1d2f-4e3a-9b8c-7d6e5f4a3b2c ").maybe_id
        == "0b5a4c9e-1d2f-4e3a-9b8c-7d6e5f4a3b2c"
    )
    assert parse_query("cyc-7").maybe_id == "cyc-7"
    assert parse_query("two words").maybe_id is None
    assert parse_query('"ses_1"').maybe_id is None  # a phrase is text
