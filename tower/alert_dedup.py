"""Which alerts are due a delivery (pure: the time is passed in).

Producers hand over a condition's state every time they look at it (a live rule every tick, the
fleet every evaluation), so most alerts repeat what was said already. `Deduper.due` lets one
through when its key is new, when its state changed (firing to resolved and back), or when the
same state was last sent at least ``repeat_s`` ago (a reminder, and what keeps an Alertmanager
alert from lapsing). A resolve for a key never sent is dropped: nobody was told it fired;
unless ``shared``: other processes may have sent it, and the store's claim decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from tower.alert import Alert

__all__ = ["Conditions", "Deduper", "session_path"]


def session_path(session_id: str) -> str:
    """The console page of a session, as an alert's ``path``."""
    return "/#/session/" + quote(session_id, safe="")


class Conditions:
    """A producer's conditions from one look to the next: `look` returns what fires now and
    the resolve of each alert that fired at the last look and does not any more."""

    def __init__(self) -> None:
        self.firing: dict[str, Alert] = {}

    def look(self, now_firing: Iterable[Alert]) -> list[Alert]:
        current = {a.key: a for a in now_firing}
        gone = [a.resolved() for key, a in self.firing.items() if key not in current]
        self.firing = current
        return [*current.values(), *gone]


class Deduper:
    def __init__(self, repeat_s: float, *, keep: int = 10_000) -> None:
        self.repeat_s = repeat_s
        self.keep = keep
        self.last: dict[str, tuple[str, float]] = {}  # key -> (state sent, when)
        self.started: dict[str, float] = {}  # key -> when it began firing (startsAt)

    def due(self, alert: Alert, now: float, *, shared: bool = False) -> bool:
        """True when ``alert`` is to be sent now; it then counts as sent at ``now``."""
        was = self.last.get(alert.key)
        if was is None and alert.state == "resolved" and not shared:
            return False
        if was is not None and was[0] == alert.state and now - was[1] < self.repeat_s:
            return False
        if alert.state == "firing" and (was is None or was[0] != "firing"):
            self.started[alert.key] = now
        self.last[alert.key] = (alert.state, now)
        self._trim(now)
        return True

    def _trim(self, now: float) -> None:
        """Forget resolved keys past a repeat interval, then the oldest, so memory stays bounded."""
        if len(self.last) <= self.keep:
            return
        for key, (state, at) in list(self.last.items()):
            if state == "resolved" and now - at >= self.repeat_s:
                del self.last[key]
                self.started.pop(key, None)
        while len(self.last) > self.keep:
            key = min(self.last, key=lambda k: self.last[k][1])
            del self.last[key]
            self.started.pop(key, None)
