"""Quota windows and their burn-rate forecast (pure, property-tested): the window holds now, a
faster burn never runs out later, a forecast before the reset is said in days, and each alert
is raised once per window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tower.quotas import Quota, forecast, provider_of, quota_crossings, quota_from_mapping, window_of

DAY = 86400.0
nows = st.datetimes(datetime(2025, 1, 1), datetime(2030, 12, 31)).map(lambda d: d.replace(tzinfo=UTC))
quotas = st.builds(
    Quota,
    provider=st.just("anthropic"),
    limit=st.floats(1, 1e9),
    window=st.sampled_from(["monthly", "rolling"]),
    reset_day=st.integers(1, 28),
    hours=st.floats(1, 24 * 31),
)


@given(quotas, nows)
def test_the_window_holds_now(q: Quota, now: datetime) -> None:
    start, reset = window_of(q, now)
    assert start <= now
    if q.window == "monthly":
        assert reset is not None and now < reset and start.day == reset.day == q.reset_day
        assert timedelta(days=28) <= reset - start <= timedelta(days=31)
    else:
        assert reset is None and now - start == timedelta(hours=q.hours)


@given(quotas, nows, st.floats(0, 2e9), st.floats(0, 1e9), st.floats(1, 10))
def test_a_faster_burn_never_runs_out_later(
    q: Quota, now: datetime, used: float, recent: float, k: float
) -> None:
    slow, fast = forecast(q, used, recent, DAY, now), forecast(q, used, recent * k, DAY, now)
    if slow.exhausted_at is not None:
        assert fast.exhausted_at is not None and fast.exhausted_at <= slow.exhausted_at
    assert slow.before_reset <= fast.before_reset
    for f in (slow, fast):
        assert f.seconds_left is None or f.seconds_left >= 0
        if used >= q.limit:
            assert f.seconds_left == 0 and f.ratio >= 1
        if f.before_reset and f.reset is not None:
            assert f.exhausted_at is not None and f.exhausted_at < f.reset


@given(quotas, nows, st.floats(0, 1e9))
def test_nothing_burnt_lately_never_runs_out(q: Quota, now: datetime, used: float) -> None:
    f = forecast(q, min(used, q.limit * 0.99), 0.0, DAY, now)
    assert f.exhausted_at is None and not f.before_reset


def test_a_key_that_runs_out_before_its_reset_says_when() -> None:
    q = Quota("anthropic", 100_000_000, key_label="team-a", reset_day=1)
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    # 40M used; 3.6M in the last day: 60M left lasts 16.7 days, to Dec 19, 12 days before Jan 1
    f = forecast(q, 40_000_000, 3_600_000, DAY, now)
    assert f.before_reset and f.exhausted_at is not None and f.exhausted_at.date().isoformat() == "2026-12-19"
    assert (
        f.sentence(q, DAY)
        == "at the last 24 h's rate key team-a runs out on Dec 19 04:00 UTC, 12 days before its reset"
    )
    levels = [lv for lv, _ in quota_crossings(q, f)]
    assert levels == ["forecast"]
    keys = {k for _, k in quota_crossings(q, f)}
    assert quota_crossings(q, f, keys) == []
    spent = forecast(q, 100_000_001, 0, DAY, now)
    assert [lv for lv, _ in quota_crossings(q, spent, keys)] == ["exhausted"]
    assert spent.sentence(q, DAY) == "key team-a has run out; it resets on Jan 01"


def test_a_rolling_window_runs_out_only_when_the_rate_fills_it() -> None:
    q = Quota("openai", 1000, window="rolling", hours=5)
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert forecast(q, 500, 150, 3600, now).exhausted_at is None  # 150/h x 5 h = 750 < 1000
    f = forecast(q, 500, 250, 3600, now)  # 250/h x 5 h = 1250
    assert f.before_reset and f.seconds_left == pytest.approx(2 * 3600)


def test_the_provider_of_a_model() -> None:
    assert [
        provider_of(m) for m in ("fake/fake-model", "claude-sonnet-4-5", "anthropic/claude-x", "", None)
    ] == [
        "fake",
        "anthropic",
        "anthropic",
        "",
        "",
    ]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"window": "monthly", "limit_tokens": 1}, "provider"),
        ({"provider": "x", "window": "weekly", "limit_tokens": 1}, "window"),
        ({"provider": "x", "window": "rolling", "limit_tokens": 1}, "hours"),
        ({"provider": "x", "reset_day": 31, "limit_tokens": 1}, "reset_day"),
        ({"provider": "x"}, "limit_usd or limit_tokens"),
        ({"provider": "x", "limit_tokens": 1, "drivers": "a"}, "drivers"),
        ({"provider": "x", "limit_tokens": 1, "keys": 1}, "'keys'"),
    ],
)
def test_a_bad_quota_is_refused_naming_its_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        quota_from_mapping(raw, "quotas[0]")
