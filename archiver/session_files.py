"""Session files that are not archives, as the trees an archive is built from (pure), for
`octel import archives`: `opencode export` output (1.x `{info, messages}`; OpenCode 2's export
route `{data: {info, messages}}`, typed messages), `opencode run --format json` logs (1.x's
and OpenCode 2's, which prints the same lines) and 1.x event captures. The files are read as
`octel detect` reads them (`archiver.convert_read.parse_json_text`, `convert_log`); OpenCode
2's own `/api/event` captures are told apart here (`is_v2_frames`) and read by the tower.

An export is one session: ``exports_of`` gives it as a `SessionSnapshot` so that the exports
of a folder are linked into trees by their ``parentID`` (``trees_of``), parents or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from archiver.convert_log import is_event, sessions_from_events
from archiver.convert_v2 import is_v2_message, oldest_first
from archiver.shape import as_obj
from archiver.walk import SessionSnapshot, TreeSnapshot

__all__ = ["Export", "export_of", "is_session_file", "is_v2_frames", "log_trees", "trees_of"]

Export = tuple[SessionSnapshot, int]  # the session, and its OpenCode generation (1 or 2)


def export_of(doc: object) -> Export | None:
    """The one session of an export (either generation), or None if ``doc`` is none."""
    d = as_obj(doc)
    if "schema_version" in d:
        return None  # an archive
    body = as_obj(d.get("data")) if isinstance(d.get("data"), Mapping) else d
    info, messages = body.get("info"), body.get("messages")
    if not isinstance(info, Mapping) or not isinstance(messages, list) or not isinstance(info.get("id"), str):
        return None
    v2 = "location" in info or (bool(messages) and all(is_v2_message(m) for m in messages))
    parent = info.get("parentID")
    snap = SessionSnapshot(str(info["id"]), parent if isinstance(parent, str) else None, 0)
    snap.session = dict(info)
    snap.messages = [dict(m) for m in oldest_first(messages) if isinstance(m, Mapping)]
    snap.messages_family = "export"
    return snap, 2 if v2 else 1


def is_v2_frames(doc: object) -> bool:
    """A capture of OpenCode 2's ``/api/event``: ``{id, created, type, data}`` frames."""
    head = doc[:50] if isinstance(doc, list) else []
    frames = [x for x in head if isinstance(x, Mapping) and isinstance(x.get("type"), str)]
    return bool(frames) and all(
        isinstance(x.get("data"), Mapping) and "properties" not in x for x in frames if x.get("type")
    )


def is_session_file(doc: object) -> bool:
    """An export, a run log or an event capture (not an archive)."""
    if export_of(doc) is not None or is_v2_frames(doc):
        return True
    return isinstance(doc, list) and any(is_event(x) for x in doc[:50])


def trees_of(sessions: Sequence[SessionSnapshot], generation: int, origin: str) -> list[TreeSnapshot]:
    """The sessions linked into trees by their parents (a parent not among them makes its
    child a root, still naming its parent), breadth first, each tree's depths from its root."""
    known = {s.session_id: s for s in sessions}
    kids: dict[str, list[SessionSnapshot]] = {}
    roots = []
    for s in sessions:
        if s.parent_id in known and s.parent_id != s.session_id:
            kids.setdefault(s.parent_id, []).append(s)
        else:
            roots.append(s)
    out, seen = [], set()
    for root in roots:
        queue, members = [(root, 0)], []
        while queue:
            s, depth = queue.pop(0)
            if s.session_id in seen:
                continue
            seen.add(s.session_id)
            s.depth = depth
            members.append(s)
            queue += [(k, depth + 1) for k in kids.get(s.session_id, [])]
        version = as_obj(root.session).get("version")
        out.append(
            TreeSnapshot(
                root.session_id,
                "",
                str(version) if version else None,
                members,
                [],
                origin=origin,
                generation=generation,
            )
        )
    return out


def log_trees(events: Iterable[object]) -> list[TreeSnapshot]:
    """The sessions of a run log or a 1.x event capture, in the 1.x message shape it holds."""
    found = []
    for sid, log in sessions_from_events(list(events)).items():
        items = log.items()
        if not items:
            continue
        snap = SessionSnapshot(sid, log.parent, 0)
        snap.session = {"id": sid, **({"parentID": log.parent} if log.parent else {})}
        snap.messages, snap.messages_family = items, "log"
        found.append(snap)
    return trees_of(found, 1, "file")
