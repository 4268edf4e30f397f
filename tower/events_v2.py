"""OpenCode 2's ``/api/event`` frames as the 1.x events the tower already folds (pure: no I/O,
no clock; never raises, whatever JSON it is given). A V2 frame is ``{id, created, type, data,
durable?}``; the recorder, the live board and the mirror read 1.x events ``{id, type,
properties}``. ``V2Decoder.decode`` maps one frame to what a 1.18 server would have sent:

- ``session.execution.started`` → ``session.status`` busy; ``.succeeded`` → idle; ``.failed``
  → ``session.error`` (the outcome) then idle; ``.interrupted`` → the ``MessageAbortedError`` a
  1.x abort gives, then idle; and V2's idle marker (``IDLE``, kept by the mirror alone);
- ``session.retry.scheduled`` → ``session.status`` retry with its attempt and next time
  (``at``, epoch ms of the next attempt); the 2.1 ``session.status`` / ``session.idle`` pass;
- ``permission.asked`` / ``.replied`` keep their names (V2's ``action``/``resources``/``source``
  read as ``permission``/``patterns``/``tool``); a ``form.created`` is an ask on its form id
  (``frm_…``), settled by ``form.replied`` / ``form.cancelled``;
- steps, text, reasoning, tool calls and user input → ``message.updated`` /
  ``message.part.updated`` (``message.part.delta`` for deltas), each message built up from the
  frames, so a tree deleted before it was read is archived from them;
- compaction: ``session.compacting`` (the tower's own name) and ``session.compacted``;
- ``session.deleted`` → one for the session and one for each descendant it knows (V2's
  delete removes every descendant; whether the server says so for each is not documented).

Unknown types give no event: they are counted (``ignored``), never fatal. What it keeps per
message or call is bounded (``MAX_KEPT``; the oldest is forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from archiver.shape import RawJson, as_obj, as_text
from tower.forms_v2 import form_event
from tower.live import ABORTED
from tower.messages_v2 import error_v1, pid, v1_message, v1_session
from tower.messages_v2_back import IDLE

__all__ = ["IDLE", "MAX_KEPT", "V2Decoder", "v1_message", "v1_session"]

MAX_KEPT = 4096  # messages and tool calls kept at once for building up
_IDS = ("sessionID", "assistantMessageID")


def _n(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else None


class _Bounded(OrderedDict[str, Any]):
    def keep(self, key: str, value: Any) -> Any:
        self[key] = value
        self.move_to_end(key)
        while len(self) > MAX_KEPT:
            self.popitem(last=False)
        return value


class V2Decoder:
    """Maps V2 frames to 1.x events, building each message up from its frames."""

    def __init__(self) -> None:
        self.messages: _Bounded = _Bounded()  # assistant message id -> the V2 message so far
        self.calls: _Bounded = _Bounded()  # (message id, call id) -> content index
        self.parents: _Bounded = _Bounded()  # session id -> parent id (for a cascade delete)
        self.sessions: _Bounded = _Bounded()  # session id -> its V2 record so far (whole in each update)
        self.inbox: _Bounded = _Bounded()  # inbox id -> the user message not delivered yet
        self.ignored = 0

    def decode(self, frame: object) -> list[RawJson]:
        """The 1.x events one frame means (none for unknown or malformed frames)."""
        try:
            return self._decode(frame)
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError, OverflowError):
            self.ignored += 1  # a shape no version documented: skipped, never fatal
            return []

    def _decode(self, frame: object) -> list[RawJson]:
        fr = as_obj(frame)
        kind, data, eid = as_text(fr.get("type")), as_obj(fr.get("data")), as_text(fr.get("id"))
        sid = as_text(data.get("sessionID")) or as_text(as_obj(fr.get("durable")).get("aggregateID"))
        out: list[RawJson] = []

        def ev(type_: str, **props: Any) -> None:
            # one frame may mean several events: each keeps a distinct id after the frame's
            ident = eid + (f".{len(out)}" if out else "") if eid else ""
            out.append({"type": type_, "properties": props, **({"id": ident} if ident else {})})

        if kind == "server.connected":
            ev("server.connected")
        elif not sid and not kind.startswith("form."):
            self.ignored += kind != ""
        elif kind == "session.created":
            rec = {**data, "id": sid}
            if "time" not in rec and fr.get("created") is not None:
                rec["time"] = {"created": fr["created"]}
            info = v1_session(self.sessions.keep(sid, rec))
            if isinstance(data.get("parentID"), str):
                self.parents.keep(sid, data["parentID"])
            ev("session.created", sessionID=sid, info=info)
        elif kind in ("session.renamed", "session.moved", "session.agent.selected", "session.model.selected"):
            info = {
                **self.sessions.get(sid, {}),
                "id": sid,
                **{k: v for k, v in data.items() if k in ("title", "location", "agent", "model")},
            }
            ev("session.updated", sessionID=sid, info=v1_session(self._known(sid, info)))
        elif kind == "session.deleted":
            for gone in [sid, *self._descendants(sid)]:
                ev("session.deleted", sessionID=gone)  # no info: the record kept stays whole
                self.parents.pop(gone, None)
                self.sessions.pop(gone, None)
        elif kind.startswith("session.execution."):
            self._execution(kind.rsplit(".", 1)[1], sid, data, ev, fr.get("created"), eid)
        elif kind == "session.retry.scheduled":
            err = as_obj(data.get("error"))
            status = {
                "type": "retry",
                "attempt": _n(data.get("attempt")) or 0,
                "message": as_text(err.get("message")) or as_text(err.get("type")),
                "next": data.get("at"),
            }
            ev("session.status", sessionID=sid, status=status)
            step = self.messages.get(as_text(data.get("assistantMessageID")))
            if step is not None:  # the step keeps its retry, as the stored message does
                step["retry"] = {k: data[k] for k in ("attempt", "at", "error") if k in data}
                self._message(step, sid, ev, all_parts=False)
        elif kind == "session.status":
            st = dict(as_obj(data.get("status")))
            if st.get("type") == "retry" and "message" not in st:
                st["message"] = ""
            ev("session.status", sessionID=sid, status=st)
        elif kind == "session.idle":
            ev("session.idle", sessionID=sid)
        elif kind == "permission.asked":
            src = as_obj(data.get("source"))
            ev(
                "permission.asked",
                **data,
                permission=as_text(data.get("action")) or "permission",
                patterns=data.get("resources") if isinstance(data.get("resources"), list) else [],
                tool={"messageID": as_text(src.get("messageID")), "callID": as_text(src.get("id"))},
            )
        elif kind == "permission.replied":
            ev("permission.replied", **data)
        elif kind.startswith("form."):
            if (got := form_event(kind, data)) is not None:
                ev(got[0], **got[1])
        elif kind.startswith("session.compaction."):
            if kind.endswith(".started"):
                ev("session.compacting", sessionID=sid)
            elif kind.endswith((".ended", ".failed")):
                ev("session.compacted", sessionID=sid)
        elif kind == "session.inbox.enqueued":
            item = as_obj(data.get("item"))
            iid = as_text(data.get("inboxID"))
            if item.get("type") == "user" and iid:
                text = as_text(as_obj(item.get("payload")).get("text"))
                msg: RawJson = {
                    "id": iid,
                    "type": "user",
                    "text": text,
                    "time": {"created": fr.get("created")},
                }
                self._message(self.inbox.keep(iid, msg), sid, ev, all_parts=True)
        elif kind == "session.inbox.delivered":
            msg = self.inbox.pop(as_text(data.get("inboxID")), None)
            if msg is not None and fr.get("created") is not None:  # the message dates from delivery
                msg["time"]["created"] = fr["created"]
                self._message(msg, sid, ev, all_parts=True)
        elif kind.startswith(("session.step.", "session.text.", "session.reasoning.", "session.tool.")):
            self._step(kind, sid, data, fr.get("created"), ev)
        else:
            self.ignored += 1
        return out

    def _descendants(self, sid: str) -> list[str]:
        out: list[str] = []
        todo = [sid]
        while todo and len(out) < MAX_KEPT:
            cur = todo.pop()
            kids = [k for k, p in self.parents.items() if p == cur and k not in out]
            out += kids
            todo += kids
        return out

    def _known(self, sid: str, info: RawJson) -> RawJson:
        # a record seen whole stays whole: an update says only what changed
        return self.sessions.keep(sid, info) if sid in self.sessions else info

    def _execution(
        self, what: str, sid: str, data: Mapping[str, Any], ev: Any, created: Any, eid: str
    ) -> None:
        if what == "started":
            ev("session.status", sessionID=sid, status={"type": "busy"})
            return
        if what == "failed":
            ev("session.error", sessionID=sid, error=error_v1(data.get("error")))
        elif what == "interrupted":
            why = f"interrupted ({as_text(data.get('reason')) or 'user'})"
            ev("session.error", sessionID=sid, error={"name": ABORTED, "data": {"message": why}})
        elif what != "succeeded":
            return
        ev("session.status", sessionID=sid, status={"type": "idle"})
        ev("session.idle", sessionID=sid)
        if eid.startswith("evt_"):  # V2 stores an idle marker under the event's id (for the mirror)
            marker = {"id": "msg_" + eid[4:], "time": {"created": created}, "type": "idle", "outcome": what}
            if what == "failed" and "error" in data:
                marker["error"] = data["error"]
            ev(IDLE, sessionID=sid, message=marker)
        rec = self.sessions.get(sid)
        if rec is not None:  # the record says how it ended, as V2's own does (outcome, time.idle)
            t = {**as_obj(rec.get("time")), **({"idle": created} if created is not None else {})}
            ev(
                "session.updated",
                sessionID=sid,
                info=v1_session(self._known(sid, {**rec, "outcome": what, "time": t})),
            )

    def _message(
        self, msg: Mapping[str, Any], sid: str, ev: Any, *, all_parts: bool, index: int = -1
    ) -> None:
        m = v1_message(msg, sid)
        if m is None:
            return
        ev("message.updated", sessionID=sid, info=m["info"])
        want = pid(as_text(msg.get("id")), index)
        for part in m["parts"]:
            if all_parts or part["id"] == want:
                ev("message.part.updated", sessionID=sid, part=part)

    def _step(self, kind: str, sid: str, data: Mapping[str, Any], created: Any, ev: Any) -> None:
        mid = as_text(data.get("assistantMessageID"))
        if not mid:
            self.ignored += 1
            return
        msg = self.messages.get(mid)
        if msg is None:
            msg = self.messages.keep(
                mid, {"id": mid, "type": "assistant", "content": [], "time": {"created": created}}
            )
        content: list[Any] = msg["content"]
        if kind == "session.step.started":
            msg.update(agent=data.get("agent"), model=data.get("model"))
            msg["time"]["created"] = data.get("started", created)
            self._message(msg, sid, ev, all_parts=False)
            return
        if kind in ("session.step.ended", "session.step.failed"):
            msg.update({k: v for k, v in data.items() if k not in _IDS})  # finish, rawFinish, cost, …
            msg["time"]["completed"] = created
            self._message(msg, sid, ev, all_parts=False)
            self.messages.pop(mid, None)  # a step is one message: nothing more comes for it
            return
        if kind in ("session.text.delta", "session.reasoning.delta"):
            at = self.calls.get(f"{mid} {kind.split('.')[1]}#{data.get('ordinal')}")
            if isinstance(at, int) and isinstance(data.get("delta"), str):
                ev(
                    "message.part.delta",
                    sessionID=sid,
                    messageID=mid,
                    partID=pid(mid, at),
                    field="text",
                    delta=data["delta"],
                )
            return
        if kind in (
            "session.text.started",
            "session.reasoning.started",
            "session.text.ended",
            "session.reasoning.ended",
        ):
            what = kind.split(".")[1]
            at = self._slot(
                mid,
                f"{what}#{data.get('ordinal')}",
                content,
                {"type": what, "text": as_text(data.get("text"))},
            )
            item = content[at]
            item.update(
                {k: v for k, v in data.items() if k not in (*_IDS, "ordinal", "text")}
            )  # state, native
            if what == "reasoning" and created is not None:  # a reasoning item has times, a text none
                t = item.setdefault("time", {})
                t["completed" if kind.endswith("ended") else "created"] = created
        elif kind in ("session.tool.input.started", "session.tool.called"):
            at = self._slot(
                mid, as_text(data.get("id")), content, {"type": "tool", "id": as_text(data.get("id"))}
            )
            item = content[at]
            item.setdefault("name", as_text(data.get("name")) or "tool")
            item.setdefault("time", {"created": created})
            item["state"] = {
                "status": "running" if kind.endswith("called") else "streaming",
                "input": data.get("input") if isinstance(data.get("input"), Mapping) else {},
            }
        elif kind in ("session.tool.success", "session.tool.failed", "session.tool.progress"):
            at = self._slot(
                mid,
                as_text(data.get("id")),
                content,
                {"type": "tool", "id": as_text(data.get("id")), "name": "tool"},
            )
            item = content[at]
            state: RawJson = dict(as_obj(item.get("state")))
            if "metadata" in data:
                state["metadata"] = data["metadata"]
            if kind.endswith("success"):
                state["status"], state["content"] = "completed", data.get("content")
            elif kind.endswith("failed"):
                state["status"], state["error"] = "error", data.get("error")
            else:
                state.setdefault("status", "running")
            item["state"] = state
            if not kind.endswith("progress"):
                item.setdefault("time", {})["completed"] = created
        elif kind == "session.step.streamed":
            msg["time"]["streamed"] = created
            self._message(msg, sid, ev, all_parts=False)
            return
        else:
            return  # tool.input.ended, …: nothing the message holds
        self._message(msg, sid, ev, all_parts=False, index=at)

    def _slot(self, mid: str, key: str, content: list[Any], item: RawJson) -> int:
        """The index of the content item ``key`` names in message ``mid`` (added when new)."""
        at = self.calls.get(f"{mid} {key}")
        if not isinstance(at, int) or at >= len(content):
            content.append(item)
            at = self.calls.keep(f"{mid} {key}", len(content) - 1)
        elif item.get("text"):
            content[at]["text"] = item["text"]
        return int(at)
