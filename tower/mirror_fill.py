"""Read from the server what the mirror's event stream missed: a session first seen mid-run
(the watcher started late), or one alive while the stream was down. Folded as if just after the
newest event seen when the read began, so every later event still wins. OpenCode 2's typed
messages are folded in the 1.x shape its events are read as (``tower.events_v2``)."""

from __future__ import annotations

from collections.abc import Callable

from archiver.client import OpenCodeClient
from archiver.errors import FetchError
from tower.messages_v2 import v1_message
from tower.mirror import Mirror

__all__ = ["fill_mirror"]


async def fill_mirror(
    client: OpenCodeClient, mirror: Mirror, now: float, log: Callable[[str], None] = lambda _m: None
) -> int:
    """Read each session the mirror wants; returns how many were filled. A session the server
    no longer has counts as deleted; any other failure leaves the mirror saying what it lacks."""
    filled, failed = 0, []
    for sid in mirror.wanted():
        key = mirror.last_key  # the read is at least as new as this event
        try:
            record = await client.session(sid)
            messages = await client.messages(sid, record)
        except FetchError as exc:
            if exc.error_kind == "not_found":
                mirror.on_event({"type": "session.deleted", "properties": {"sessionID": sid}}, now)
            else:
                failed.append((sid, exc.error_kind))
            continue
        except Exception as exc:  # never breaks the watch: said, and tried again later
            failed.append((sid, type(exc).__name__))
            continue
        items, idles = messages.items, []
        if client.is_v2:
            idles = [x for x in items if isinstance(x, dict) and x.get("type") == "idle"]
            items = [m for x in items if (m := v1_message(x, sid)) is not None]
        mirror.fill(sid, record, items, key, now, idles)
        filled += 1
    if failed:  # the server is away: try again when each session next moves
        mirror.later(s for s, _ in failed)
        log(
            f"mirror: {len(failed)} sessions not read to fill what the stream missed "
            f"(e.g. {failed[0][0]}: {failed[0][1]}); again when they next move"
        )
    return filled
