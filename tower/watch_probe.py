"""The watcher's probe of a tree that runs long: past a share of its budget, read the tree from
the server, score each session, store the findings, and abort the tree on a stuck one when
configured. At most once a probe interval per tree."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from archiver.client import OpenCodeClient
from archiver.document import score_session
from archiver.errors import FetchError
from archiver.recorder import PermissionHistory, StatusHistory
from archiver.walk import walk_tree
from detectors.findings import FindingDict

__all__ = ["AbortFn", "FindingsFn", "Prober"]

FindingsFn = Callable[[str, list[FindingDict]], Awaitable[None]]
AbortFn = Callable[[str, str], Awaitable[None]]


class Prober:
    def __init__(
        self,
        client: OpenCodeClient,
        history: Callable[[str], tuple[StatusHistory, PermissionHistory]],
        *,
        budget: float,
        after_share: float,
        interval: float,
        abort_on_stuck: bool,
        on_findings: FindingsFn | None,
        on_abort: AbortFn | None,
        log: Callable[[str], None],
    ) -> None:
        self.client, self._history = client, history
        self._after, self._interval, self._abort = budget * after_share, interval, abort_on_stuck
        self._on_findings, self._on_abort, self._log = on_findings, on_abort, log
        self.probed: dict[str, float] = {}  # root -> last probe
        self.probes = 0

    async def maybe(self, root: str, since: float, now: float) -> None:
        if now - since < self._after or now - self.probed.get(root, -1e18) < self._interval:
            return
        self.probed[root] = now
        self.probes += 1
        snap = await walk_tree(self.client, root, extras=False)
        status, perms = self._history(root)
        for s in snap.sessions:
            found = score_session(
                s.messages, status.get(s.session_id, []), perms.get(s.session_id, []), s.session_id
            )
            if found and self._on_findings is not None:
                await self._on_findings(s.session_id, found)
            stuck = [f for f in found if f["verdict"] == "stuck"]
            if stuck and self._abort:
                detector = str(stuck[0]["detector"])
                self._log(f"aborting {root}: {detector} finds it stuck")
                try:
                    await self.client.abort(root)
                except FetchError as exc:
                    self._log(f"abort of {root} failed: {exc}")
                if self._on_abort is not None:
                    await self._on_abort(root, detector)
                return
