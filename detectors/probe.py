"""The incremental probe and the batch `score()` built on it."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterable

from detectors.base import REGISTRY, Registry
from detectors.digest import digest, undo_of
from detectors.findings import Finding, Verdict, worst_verdict
from detectors.model import Message, PermissionEvent, StatusSample
from detectors.thresholds import Thresholds

__all__ = ["Probe", "score"]


class Probe:
    """Live scoring: feed messages (in order, each once it is complete), status samples and
    permission events as they arrive, and ask for `findings()` whenever you like.

    Work per message is proportional to its parts; `findings()` costs the same whatever the
    length of the stream. The three inputs may be interleaved in any way: the findings depend
    only on each one's own order.
    """

    def __init__(
        self,
        *,
        thresholds: Thresholds | None = None,
        registry: Registry | None = None,
        only: Iterable[str] | None = None,
    ) -> None:
        self.thresholds = thresholds or Thresholds()
        self._detectors = (registry or REGISTRY).create(self.thresholds, only)
        self.messages_seen = 0
        # Every change this session made, and each edit's undo: doing one again is no progress.
        self._changes: set[str] = set()

    def _new_change(self, edits: tuple[str, ...]) -> bool:
        new = False
        for sig in edits:
            if sig not in self._changes:
                new = True
                self._changes.add(sig)
                undo = undo_of(sig)
                if undo is not None:
                    self._changes.add(undo)
        return new

    def feed(self, message: Message) -> None:
        turn = digest(message)
        if turn.file_change:
            turn.file_change = self._new_change(turn.edits)
        for d in self._detectors:
            d.feed(turn)
        self.messages_seen += 1

    def feed_status(self, sample: StatusSample) -> None:
        for d in self._detectors:
            d.status(sample)

    def feed_permission(self, event: PermissionEvent) -> None:
        for d in self._detectors:
            d.permission(event)

    def findings(self, *, include_healthy: bool = False) -> list[Finding]:
        """One finding per detector, in registry order; healthy ones only on request."""
        out = [d.finding() for d in self._detectors]
        return out if include_healthy else [f for f in out if f.verdict != "healthy"]

    def peek(self, in_flight: Message, *, include_healthy: bool = False) -> list[Finding]:
        """Findings as if `in_flight` (a message still being written) were fed, without
        feeding it: a watcher can show a call hanging now and feed the message once complete.
        Costs a copy of the probe's state, so call it per poll rather than per part."""
        twin = self._twin()
        twin.feed(in_flight)
        return twin.findings(include_healthy=include_healthy)

    def _twin(self) -> Probe:
        """A deep copy. A watcher peeks at every session writing a message, so the copy runs in
        C (pickle: 2-3x faster than `copy.deepcopy` on detector state); a detector whose state
        does not pickle (a class defined inside a function) is copied the slow way."""
        try:
            twin: Probe = pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, AttributeError, TypeError):
            twin = copy.deepcopy(self)
        return twin

    def verdict(self) -> Verdict:
        return worst_verdict(self.findings())


def score(
    messages: Iterable[Message],
    *,
    status: Iterable[StatusSample] = (),
    permissions: Iterable[PermissionEvent] = (),
    thresholds: Thresholds | None = None,
    include_healthy: bool = False,
    registry: Registry | None = None,
) -> list[Finding]:
    """Score a whole stream. Returns the non-healthy findings (all with `include_healthy`)."""
    probe = Probe(thresholds=thresholds, registry=registry)
    for m in messages:
        probe.feed(m)
    for s in status:
        probe.feed_status(s)
    for e in permissions:
        probe.feed_permission(e)
    return probe.findings(include_healthy=include_healthy)
