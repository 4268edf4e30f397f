"""The audit read before acting (pure): an intent whose key the audit holds, with any outcome,
is never acted on again, and a row another watcher left ``sending`` is handed back to be
reported, never re-sent; a run's key is its prompt, the same for every watcher that saw it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tower.actions import OUTCOMES, Intent, Recorded, Rules, SessionView, decide, screen

ME = "host:1:me"
keys = st.sampled_from([f"ask:per_{i}" for i in range(4)] + [f"abort:ses_{i}:msg_{i}" for i in range(4)])
intents = st.lists(keys, unique=True, max_size=8).map(
    lambda ks: [Intent("deny_asks_after", "reject_ask", "ses_a", k) for k in ks]
)
audits = st.dictionaries(
    keys,
    st.tuples(st.sampled_from(OUTCOMES), st.sampled_from([ME, "host:2:dead", None])),
    max_size=8,
).map(lambda d: {k: Recorded(k, o, w, i) for i, (k, (o, w)) in enumerate(d.items())})


@given(intents, audits)
def test_only_intents_the_audit_does_not_hold_are_acted_on(
    its: list[Intent], audit: dict[str, Recorded]
) -> None:
    act, orphans = screen(its, audit, ME)
    assert [i.key for i in act] == [i.key for i in its if i.key not in audit]  # checked before acting
    assert {o.key for o in orphans} == {
        i.key
        for i in its
        if i.key in audit and audit[i.key].outcome == "sending" and audit[i.key].watcher != ME
    }
    assert not {o.key for o in orphans} & {i.key for i in act}  # a dead watcher's request: never again


def test_a_row_left_sending_by_a_dead_watcher_is_reported_not_sent() -> None:
    it = Intent("abort_retries_after", "abort", "ses_a", "abort:ses_a:msg_1")
    left = Recorded(it.key, "sending", "host:2:dead", 7)
    assert screen([it], {it.key: left}, ME) == ([], [left])
    assert screen([it], {it.key: Recorded(it.key, "sending", ME, 7)}, ME) == ([], [])  # mine, in flight
    assert screen([it], {it.key: Recorded(it.key, "done", "host:2:dead", 7)}, ME) == ([], [])
    assert screen([it], {}, ME) == ([it], [])


@given(st.floats(0, 1000), st.floats(0, 1000))
def test_the_abort_key_of_a_run_is_its_prompt_whatever_the_watcher_saw_of_its_start(
    a: float, b: float
) -> None:
    def view(since: float) -> SessionView:
        return SessionView("ses_a", "retrying", retry_attempt=3, run_since=since, run_id="msg_01")

    rules = Rules(abort_retries_after=2)
    (first,) = decide([view(a)], rules, 2000.0)
    (second,) = decide([view(b)], rules, 2000.0)  # another watcher, which saw the run begin later
    assert first.key == second.key == "abort:ses_a:msg_01"
    (later,) = decide(
        [SessionView("ses_a", "retrying", retry_attempt=3, run_since=a, run_id="msg_02")], rules, 2000.0
    )
    assert later.key != first.key  # a new prompt is a new run: acted on again
