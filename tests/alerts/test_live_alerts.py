"""The live rules' alerts: a stuck finding of a detector a rule names fires while the board shows
it and resolves when it is gone or the session quiet; an action carried out fires until its
session is no longer active; a notice and a skipped intent have no alert of their own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tower.act import Carried
from tower.actions import Intent, Rules, SessionView
from tower.live_alerts import LiveAlerts, stuck_alerts

RULES = Rules(on_stuck=(("doom_loop", "notify"), ("retry_cascade", "abort")))
SECRET = "sk-live-abcdefghijklmnop"


def _finding(det: str, verdict: str = "stuck") -> dict[str, object]:
    return {"detector": det, "verdict": verdict, "score": 0.9, "summary": f"ran {SECRET} again"}


def _view(sid: str, *findings: dict[str, object]) -> SessionView:
    return SessionView(sid, "busy", root_session_id="ses_root", findings=findings)


def _redact(s: str) -> str:
    return s.replace(SECRET, "[REDACTED]")


def test_only_stuck_findings_of_named_detectors_alert_redacted_and_linked() -> None:
    found = (_finding("doom_loop"), _finding("doom_loop", "suspect"), _finding("empty_reasoning"))
    views = [_view("ses_1", *found)]
    (a,) = stuck_alerts(views, RULES, _redact)
    assert (a.key, a.kind, a.severity, a.tree_id, a.path) == (
        "stuck:ses_1:doom_loop",
        "stuck",
        "warning",
        "ses_root",
        "/#/session/ses_1",
    )
    assert SECRET not in a.summary and "[REDACTED]" in a.summary and a.labels["rule"] == "on_stuck=notify"
    (b,) = stuck_alerts([_view("ses_2", _finding("retry_cascade"))], RULES, _redact)
    assert b.severity == "critical"  # an abort rule names it: worse


@given(st.lists(st.lists(st.sampled_from(["ses_1", "ses_2", "ses_3"]), unique=True), max_size=12))
def test_each_stuck_session_fires_once_per_spell_and_resolves_when_it_goes(ticks: list[list[str]]) -> None:
    live = LiveAlerts(RULES, _redact)
    before: set[str] = set()
    for stuck in ticks:
        out = live.tick([_view(s, _finding("doom_loop")) for s in stuck])
        firing = {a.session_id for a in out if a.state == "firing"}
        resolved = {a.session_id for a in out if a.state == "resolved"}
        assert firing == set(stuck) and resolved == before - set(stuck)
        before = set(stuck)


def test_an_action_carried_out_fires_until_its_session_is_quiet() -> None:
    live = LiveAlerts(RULES, _redact)
    it = Intent("abort_retries_after", "abort", "ses_1", "abort:ses_1:1", {"attempt": 3})
    a = live.carried(Carried(it, "done", "POST /session/ses_1/abort", 200, "true"), "ses_root")
    assert a is not None
    assert (a.kind, a.key, a.tree_id) == ("live_rule", "live_rule:abort:ses_1:1", "ses_root")
    assert [x.state for x in live.tick([_view("ses_1")])] == ["firing"]
    assert [(x.key, x.state) for x in live.tick([])] == [(a.key, "resolved")]
    notice = Intent("on_stuck", "notify", "ses_1", "notify:ses_1:1:doom_loop", {"detector": "doom_loop"})
    assert live.carried(Carried(notice, "notified", "queued"), None) is None
    assert live.carried(Carried(it, "skipped", "moved on"), None) is None
