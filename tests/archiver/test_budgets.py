"""Budgets (pure, property-tested): each warning and breach raised once, at the right share;
the intents a breach asks for stop only live sessions in its scope, once per run; a rules
entry with a bad field is refused naming it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tower.actions import RULES, SessionView
from tower.budgets import SCOPES, Budget, Used, budget_from_mapping, budget_intents, crossings
from tower.live import STATES

SUBJECTS = ["ses_a", "ses_b", "nightly", "batch-1", ""]

budget_st = st.builds(
    Budget,
    scope=st.sampled_from(SCOPES),
    limit=st.floats(0.01, 100),
    unit=st.sampled_from(["usd", "tokens"]),
    match=st.sampled_from(["*", "ses_a", "batch-*", "nightly"]),
    warn_at=st.floats(0.05, 1),
    action=st.sampled_from(["abort", "notify"]),
)
spent_st = st.dictionaries(
    st.tuples(st.sampled_from(SCOPES), st.sampled_from(SUBJECTS)),
    st.builds(Used, usd=st.floats(0, 200), tokens=st.integers(0, 200)),
    max_size=8,
)


@given(spent_st, st.lists(budget_st, max_size=4))
def test_each_crossing_is_at_its_share_and_raised_once(spent, budgets: list[Budget]) -> None:
    got = crossings(spent, budgets, "2026-12-02")
    assert len({c.key for c in got}) == len(got)
    for c in got:
        assert (c.budget.scope, c.subject) in spent
        used = spent[(c.budget.scope, c.subject)].of(c.budget.unit)
        assert c.used == used
        if c.level == "breach":
            assert used >= c.budget.limit
        else:
            assert c.budget.warn_at * c.budget.limit <= used < c.budget.limit and c.budget.warn_at < 1
    assert crossings(spent, budgets, "2026-12-02", {c.key for c in got}) == []  # once


@given(spent_st, st.lists(budget_st, min_size=1, max_size=4), st.floats(1, 3))
def test_more_spend_never_takes_a_breach_back(spent, budgets: list[Budget], factor: float) -> None:
    more = {k: Used(v.usd * factor, int(v.tokens * factor)) for k, v in spent.items()}
    before = {(c.budget, c.subject) for c in crossings(spent, budgets, "d") if c.level == "breach"}
    after = {(c.budget, c.subject) for c in crossings(more, budgets, "d") if c.level == "breach"}
    assert before <= after


def test_a_day_scope_is_raised_again_the_next_day_and_a_tree_is_not() -> None:
    day = Budget("fleet_day", 1.0)
    tree = Budget("tree", 1.0)
    spent = {("fleet_day", ""): Used(2.0), ("tree", "ses_a"): Used(2.0)}
    first = crossings(spent, [day, tree], "2026-12-01")
    assert [c.level for c in first] == ["breach", "breach"]
    again = crossings(spent, [day, tree], "2026-12-02", {c.key for c in first})
    assert [(c.budget.scope, c.level) for c in again] == [("fleet_day", "breach")]


def test_a_warning_comes_first_then_the_breach() -> None:
    b = Budget("tree", 1.0, warn_at=0.8)
    (w,) = crossings({("tree", "ses_a"): Used(0.85)}, [b], "d")
    (x,) = crossings({("tree", "ses_a"): Used(1.2)}, [b], "d", {w.key})
    assert (w.level, x.level) == ("warning", "breach") and w.key != x.key


@st.composite
def views_st(draw: st.DrawFn) -> list[SessionView]:
    out = []
    for i in range(draw(st.integers(0, 5))):
        out.append(
            SessionView(
                session_id=f"ses_{i}",
                state=draw(st.sampled_from(STATES)),
                root_session_id=draw(st.sampled_from(["ses_a", "ses_b", None])),
                run_since=draw(st.one_of(st.none(), st.floats(0, 100))),
                run_id=draw(st.one_of(st.none(), st.sampled_from(["msg_1", "msg_2"]))),
            )
        )
    return out


@given(views_st(), spent_st, st.lists(budget_st, max_size=4), st.sampled_from(["nightly", None]))
def test_intents_stop_only_live_sessions_of_a_scope_over_its_limit(views, spent, budgets, driver) -> None:
    def subjects(v: SessionView) -> dict[str, str]:
        out = {"tree": v.root_session_id or v.session_id}
        return out | ({"driver_day": driver} if driver else {})

    got = budget_intents(views, spent, budgets, subjects)  # type: ignore[arg-type]
    assert len({i.key for i in got}) == len(got)
    by_id = {v.session_id: v for v in views}
    for it in got:
        v = by_id[it.session_id]
        assert it.rule == "budget" and it.rule in RULES
        assert v.state not in ("idle", "interrupted", "errored", "deleted", "unknown")
        assert it.evidence["used"] >= it.evidence["limit"] - 1e-6
        assert it.evidence["subject"] == {**subjects(v), "fleet_day": ""}[it.evidence["scope"]]
        if it.kind == "abort":
            assert it.key == f"abort:{v.session_id}:{v.run_id or v.run_since}"  # the other rules' key
    assert budget_intents(views, spent, budgets, subjects, {i.key for i in got}) == []  # type: ignore[arg-type]


def test_an_aborted_run_is_not_aborted_again_whatever_its_clock_says() -> None:
    spent = {("tree", "ses_a"): Used(usd=6.0)}
    subjects = lambda v: {"tree": "ses_a"}  # noqa: E731
    busy = SessionView("ses_a", "busy", root_session_id="ses_a", run_since=1.0, run_id="msg_1")
    (first,) = budget_intents([busy], spent, [Budget("tree", 5.0)], subjects)
    # after the abort the watcher's clock for the run moves; the prompt does not
    later = [
        SessionView("ses_a", "busy", root_session_id="ses_a", run_since=9.0, run_id="msg_1"),
        SessionView("ses_a", "interrupted", root_session_id="ses_a", run_since=9.0, run_id="msg_1"),
    ]
    for v in later:
        assert budget_intents([v], spent, [Budget("tree", 5.0)], subjects, {first.key}) == []


def test_a_tree_over_its_limit_is_aborted_and_another_is_not() -> None:
    views = [
        SessionView("ses_a", "busy", root_session_id="ses_a", run_since=1.0),
        SessionView("ses_a1", "running_tool", root_session_id="ses_a", run_since=2.0),
        SessionView("ses_b", "busy", root_session_id="ses_b", run_since=1.0),
        SessionView("ses_c", "idle", root_session_id="ses_a"),
    ]
    spent = {("tree", "ses_a"): Used(5.02), ("tree", "ses_b"): Used(0.1)}
    got = budget_intents(views, spent, [Budget("tree", 5.0)], lambda v: {"tree": v.root_session_id or ""})
    assert [(i.session_id, i.kind, i.evidence["budget"]) for i in got] == [
        ("ses_a", "abort", "tree * $5.00"),
        ("ses_a1", "abort", "tree * $5.00"),
    ]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"scope": "week", "limit_usd": 1}, "scope"),
        ({"scope": "tree"}, "limit_usd or limit_tokens"),
        ({"scope": "tree", "limit_usd": 1, "limit_tokens": 5}, "limit_usd or limit_tokens"),
        ({"scope": "tree", "limit_usd": -1}, "limit_usd"),
        ({"scope": "tree", "limit_usd": 1, "warn_at": 1.5}, "warn_at"),
        ({"scope": "tree", "limit_usd": 1, "action": "kill"}, "action"),
        ({"scope": "tree", "limit_usd": 1, "limits": 2}, "'limits'"),
        ({"scope": "label", "limit_usd": 1, "match": ""}, "match"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        budget_from_mapping(raw, "budgets[0]")


def test_a_rule_reads_as_its_budget() -> None:
    got = budget_from_mapping({"scope": "driver_day", "match": "nightly", "limit_tokens": 2_000_000})
    assert got == Budget("driver_day", 2_000_000.0, "tokens", "nightly", 0.8, "abort")
    assert got.name == "driver_day nightly 2,000,000 tokens"
