"""The pure parts of alert delivery: what each channel is sent, the signature, which alerts are
due (deduplication), and the transitions of a producer's conditions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tower.alert import Alert
from tower.alert_dedup import Conditions, Deduper
from tower.alert_payloads import (
    alertmanager_alerts,
    console_link,
    group_by_tree,
    sign,
    slack_payload,
    verify,
    webhook_payload,
)

KEYS = st.sampled_from(["stuck:a:doom_loop", "stuck:b:doom_loop", "daemon_down:d:h", "live_rule:ask:1"])
TREES = st.sampled_from([None, "ses_a", "ses_b"])
ALERTS = st.builds(
    Alert,
    key=KEYS,
    kind=st.sampled_from(["stuck", "daemon_down"]),
    severity=st.sampled_from(["info", "warning", "critical"]),
    summary=st.text(max_size=40),
    state=st.sampled_from(["firing", "resolved"]),
    tree_id=TREES,
)


def _alert(state: str = "firing", **kw: object) -> Alert:
    base: dict[str, object] = {
        "key": "stuck:ses_1:doom_loop",
        "kind": "stuck",
        "severity": "warning",
        "summary": "session ses_1 is stuck: doom_loop",
        "state": state,
        "tree_id": "ses_root",
        "session_id": "ses_1",
        "path": "/#/session/ses_1",
        "labels": {"detector": "doom_loop", "kind": "not-the-kind"},
    }
    return Alert(**{**base, **kw})  # type: ignore[arg-type]


def test_alertmanager_gets_labels_annotations_times_and_the_console_link() -> None:
    (firing,) = alertmanager_alerts(
        [_alert()], "http://octel.test:8765/", 1000.0, 60.0, {"stuck:ses_1:doom_loop": 900.0}
    )
    assert firing["labels"] == {
        "alertname": "octel_stuck",
        "severity": "warning",
        "kind": "stuck",  # a producer's label never overwrites an identity label
        "key": "stuck:ses_1:doom_loop",
        "tree": "ses_root",
        "session": "ses_1",
        "detector": "doom_loop",
    }
    assert firing["annotations"]["console"] == "http://octel.test:8765/#/session/ses_1"
    assert firing["generatorURL"] == firing["annotations"]["console"]
    assert (firing["startsAt"], firing["endsAt"]) == ("1970-01-01T00:15:00Z", "1970-01-01T00:19:40Z")
    (resolved,) = alertmanager_alerts([_alert("resolved")], "", 1000.0, 60.0)
    assert resolved["endsAt"] == "1970-01-01T00:16:40Z" and "generatorURL" not in resolved


@given(st.lists(ALERTS, max_size=12))
def test_grouping_keeps_every_alert_once_and_each_group_one_tree(alerts: list[Alert]) -> None:
    groups = group_by_tree(alerts)
    assert sorted((a.key, a.state, a.summary) for _, g in groups for a in g) == sorted(
        (a.key, a.state, a.summary) for a in alerts
    )
    assert all(a.tree_id == tree for tree, g in groups for a in g)
    assert len({tree for tree, _ in groups}) == len(groups)


def test_webhook_payloads_say_the_tree_status_and_links() -> None:
    both = [
        _alert(),
        _alert("resolved", key="stuck:ses_2:doom_loop", session_id="ses_2", path="/#/session/ses_2"),
    ]
    body = webhook_payload("ses_root", both, "http://c", 0.0)
    assert body["status"] == "firing" and body["tree_id"] == "ses_root"
    assert [a["url"] for a in body["alerts"]] == ["http://c/#/session/ses_1", "http://c/#/session/ses_2"]
    assert webhook_payload("ses_root", both[1:], "http://c", 0.0)["status"] == "resolved"
    slack = slack_payload("ses_root", both, "http://c")
    assert slack["text"].splitlines()[0] == "octel: 2 alert(s) in tree ses_root"
    assert "<http://c/#/session/ses_1|stuck:ses_1:doom_loop>" in slack["text"]
    assert [b["type"] for b in slack["blocks"]] == ["section"] * 3


@given(
    st.binary(min_size=1, max_size=32),
    st.integers(0, 2**40),
    st.binary(max_size=200),
    st.binary(max_size=200),
)
def test_a_signature_verifies_only_its_own_body_and_time(
    secret: bytes, ts: int, body: bytes, other: bytes
) -> None:
    sig = sign(secret, ts, body)
    assert sig.startswith("sha256=") and verify(secret, ts, body, sig)
    assert verify(secret, ts, other, sig) == (other == body)
    assert not verify(secret, ts + 1, body, sig)


def test_console_links_join_base_and_path() -> None:
    assert console_link("http://h:1/", "/#/session/x") == "http://h:1/#/session/x"
    assert console_link("", "/#/session/x") == "/#/session/x"


@given(st.lists(st.tuples(ALERTS, st.floats(0, 50)), max_size=30), st.floats(1, 20))
def test_the_same_state_is_not_sent_again_within_the_repeat_interval(
    stream: list[tuple[Alert, float]], repeat: float
) -> None:
    d = Deduper(repeat)
    now, sent = 0.0, {}
    for a, step in stream:
        now += step
        was = sent.get(a.key)
        due = d.due(a, now)
        if was is None:
            assert due == (a.state == "firing")  # a resolve nobody heard the firing of is dropped
        elif was[0] != a.state:
            assert due  # a change of state is always said
        else:
            assert due == (now - was[1] >= repeat)
        if due:
            sent[a.key] = (a.state, now)


def test_conditions_resolve_what_stopped_firing_once() -> None:
    c = Conditions()
    a, b = _alert(), _alert(key="daemon_down:d:h")
    assert [x.state for x in c.look([a, b])] == ["firing", "firing"]
    out = c.look([a])
    assert [(x.key, x.state) for x in out] == [(a.key, "firing"), (b.key, "resolved")]
    assert c.look([a]) == [a]
