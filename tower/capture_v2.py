"""A capture of OpenCode 2's ``/api/event`` (frames as JSON lines, an array or SSE text) as the
trees an archive is built from (pure), read the way ``octel watch`` reads the live stream:
``tower.events_v2`` decodes each frame and ``tower.mirror`` folds them, then gives each tree
in V2's own shapes (as a tree deleted before the server could be read is archived). What a
capture cannot vouch for (a session that began before it) is said in the walk errors."""

from __future__ import annotations

from collections.abc import Iterable

from archiver.convert_events import unwrap_event
from archiver.walk import TreeSnapshot
from tower.events_v2 import V2Decoder
from tower.mirror import Mirror

__all__ = ["capture_trees"]


def capture_trees(frames: Iterable[object]) -> list[TreeSnapshot]:
    """Each tree whose sessions the frames tell, parents before children."""
    dec, mirror = V2Decoder(), Mirror()
    for i, raw in enumerate(frames):
        frame, _ = unwrap_event(raw)
        for ev in dec.decode(frame):
            mirror.on_event(ev, float(i))
    tops = [s for s in mirror.live if mirror.parents.get(s) not in mirror.live]
    out = []
    for top in sorted(tops):
        snap = mirror.snapshot(top, "", None, 2)
        snap.origin = "file"
        out.append(snap)
    return out
