"""OpenCode 2's forms read as 1.x permission asks (`tower.forms_v2`): the ask a board shows."""

from __future__ import annotations

from tower.forms_v2 import form_event

SID = "ses_000000000001"


def test_a_form_is_an_ask_on_its_id_titled_by_its_title_or_kind() -> None:
    titled = {"form": {"id": "frm_1", "sessionID": SID, "title": "Which DB?"}}
    assert form_event("form.created", titled) == (
        "permission.asked",
        {"id": "frm_1", "sessionID": SID, "permission": "form", "patterns": ["Which DB?"], "form": True},
    )
    kinded = {"form": {"id": "frm_2", "sessionID": SID, "metadata": {"kind": "confirm"}}}
    assert form_event("form.created", kinded)[1]["patterns"] == ["confirm"]  # type: ignore[index]
    bare = {"form": {"id": "frm_3", "sessionID": SID}}
    assert form_event("form.created", bare)[1]["patterns"] == ["question"]  # type: ignore[index]


def test_a_reply_or_a_cancel_settles_the_ask() -> None:
    data = {"id": "frm_1", "sessionID": SID}
    assert form_event("form.replied", data) == (
        "permission.replied",
        {"sessionID": SID, "requestID": "frm_1", "reply": "answered"},
    )
    assert form_event("form.cancelled", data) == (
        "permission.replied",
        {"sessionID": SID, "requestID": "frm_1", "reply": "cancelled"},
    )


def test_a_form_of_no_session_or_an_unknown_form_frame_is_no_event() -> None:
    assert form_event("form.created", {"form": {"id": "frm_1", "sessionID": "global"}}) is None
    assert form_event("form.created", {"form": {"id": "frm_1"}}) is None
    assert form_event("form.replied", {"sessionID": SID}) is None
    assert form_event("form.updated", {"id": "frm_1", "sessionID": SID}) is None
    assert form_event("form.created", {"form": "not an object"}) is None
