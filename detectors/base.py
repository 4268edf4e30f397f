"""The detector interface and the registry every detector, built-in or add-on, goes through."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from detectors import addons
from detectors.addons import AddonProblem
from detectors.digest import Turn
from detectors.evidence import Evidence, NoEvidence
from detectors.findings import Finding, Verdict
from detectors.model import PermissionEvent, StatusSample
from detectors.thresholds import Threshold, Thresholds, before_first_use, declare, withdraw

__all__ = [
    "BUILTINS",
    "EVIDENCE_IDS",
    "REGISTRY",
    "Detector",
    "DetectorSpec",
    "Episode",
    "Registry",
    "register",
]

# The modules of the built-in detectors: each registers its own when imported. The default
# registry imports them when it is first used, so what needs only a verdict's name
# (`detectors.findings`, the store's query models) does not load every detector.
BUILTINS = (
    "detectors.doom_loop",
    "detectors.long_turn",
    "detectors.permission_deadlock",
    "detectors.progress",
    "detectors.quiet",
    "detectors.retry_cascade",
    "detectors.stall",
)
# Evidence keeps at most this many ids per list, so a finding stays small however long the run.
EVIDENCE_IDS = 20


class Detector:
    """Incremental detector: fed each message's digest, status sample and permission event.

    Contract (the probe's batch/incremental equivalence rests on it):
    - each `feed`/`status`/`permission` call does O(1) amortised work per part;
    - `finding()` does not change state and may be called at any time;
    - the finding depends on the message sequence, the status sequence and the permission
      sequence, never on how the three were interleaved.
    """

    name: ClassVar[str] = ""

    def __init__(self, thresholds: Thresholds) -> None:
        self.th = thresholds

    def feed(self, turn: Turn) -> None:
        """One message, in stream order."""

    def status(self, sample: StatusSample) -> None:
        """One status sample, in time order."""

    def permission(self, event: PermissionEvent) -> None:
        """One permission ask or reply, in time order."""

    def finding(self) -> Finding:
        raise NotImplementedError


class Episode:
    """The worst episode of a pattern seen so far (highest score, then longest)."""

    __slots__ = ("_cached", "count", "evidence", "score", "start", "verdict")

    def __init__(self) -> None:
        self.verdict: Verdict = "healthy"
        self.score = 0.0
        self.count = 0.0
        self.start = -1
        self.evidence: Evidence = NoEvidence()
        # The last finding built, reused while nothing changed (a live probe asks often).
        self._cached: tuple[str, bool | None, Finding] | None = None

    def offer(
        self,
        verdict: Verdict,
        score: float,
        count: float,
        start: int,
        evidence: Callable[[], Evidence],
    ) -> None:
        if (score, count) > (self.score, self.count):
            self.verdict, self.score, self.count, self.start = verdict, score, count, start
            self.evidence = evidence()
            self._cached = None

    def finding(self, name: str, active: bool | None = None) -> Finding:
        """The episode as `name`'s finding; `active` (when given) says whether it still runs."""
        c = self._cached
        if c is not None and c[0] == name and c[1] == active:
            return c[2]
        ev: Evidence = {**self.evidence} if active is None else {**self.evidence, "active": active}
        f = Finding(name, self.verdict, self.score, ev, self.start)
        self._cached = (name, active, f)
        return f


DetectorFactory = Callable[[Thresholds], Detector]
_F = TypeVar("_F", bound=DetectorFactory)


@dataclass(frozen=True, slots=True)
class DetectorSpec:
    """What a detector registers: everything else in octel reads it from here.

    `stop_reason` is the `octel why` code a stuck finding of this detector explains a stop with
    (None: its findings are evidence only); `thresholds` names the thresholds it declared.
    """

    name: str
    summary: str
    factory: DetectorFactory
    stop_reason: str | None = None
    thresholds: tuple[str, ...] = ()


class Registry:
    """Named detector factories. `register` is a decorator for a class or factory function.

    A registry given `builtins` imports those modules (which register their detectors) the
    first time it is used, before anything else registers. Given an entry-point `group`, it
    loads the add-ons installed under it the first time it is read (see `detectors.addons`);
    `addon_problems` then names those that failed.
    """

    def __init__(self, group: str | None = None, builtins: Iterable[str] = ()) -> None:
        self._specs: dict[str, DetectorSpec] = {}
        self._group = group
        self._builtins = tuple(builtins)
        self.addon_problems: tuple[AddonProblem, ...] = ()

    def _load_builtins(self) -> None:
        modules, self._builtins = self._builtins, ()
        for m in modules:
            importlib.import_module(m)

    def load_addons(self) -> None:
        """Load the built-ins and the installed add-ons now (once); later reads do not look again."""
        self._load_builtins()
        group, self._group = self._group, None
        if group is not None:
            self.addon_problems = tuple(addons.load(group))

    def register(
        self,
        name: str,
        summary: str,
        *,
        stop_reason: str | None = None,
        thresholds: Mapping[str, Threshold] | None = None,
    ) -> Callable[[_F], _F]:
        """Register a detector; `thresholds` declares the add-on's own (see `Thresholds.get`)."""

        def deco(factory: _F) -> _F:
            self._load_builtins()  # the built-ins first, in their order, whoever registers
            if name in self._specs:
                raise ValueError(f"a detector named {name!r} is already registered")
            declared: list[str] = []
            try:
                for th_name, th in (thresholds or {}).items():
                    declare(th_name, th)
                    declared.append(th_name)
            except ValueError:
                for th_name in declared:
                    withdraw(th_name)
                raise
            self._specs[name] = DetectorSpec(name, summary, factory, stop_reason, tuple(declared))
            return factory

        return deco

    def unregister(self, name: str) -> None:
        self._load_builtins()
        spec = self._specs.pop(name, None)
        for th_name in spec.thresholds if spec is not None else ():
            withdraw(th_name)

    def spec(self, name: str) -> DetectorSpec | None:
        self.load_addons()
        return self._specs.get(name)

    def specs(self) -> tuple[DetectorSpec, ...]:
        self.load_addons()
        return tuple(self._specs.values())

    def names(self) -> tuple[str, ...]:
        self.load_addons()
        return tuple(self._specs)

    def create(self, thresholds: Thresholds, only: Iterable[str] | None = None) -> list[Detector]:
        self.load_addons()
        wanted = None if only is None else set(only)
        if wanted is not None and wanted - set(self._specs):
            missing = ", ".join(sorted(wanted - set(self._specs)))
            raise ValueError(f"unknown detector(s): {missing}")
        return [s.factory(thresholds) for s in self._specs.values() if wanted is None or s.name in wanted]


REGISTRY = Registry(group=addons.GROUP, builtins=BUILTINS)
# An add-on's thresholds must be known before the first `-t name=value` is read.
before_first_use(REGISTRY.load_addons)


def register(
    name: str,
    summary: str,
    *,
    stop_reason: str | None = None,
    thresholds: Mapping[str, Threshold] | None = None,
) -> Callable[[_F], _F]:
    """Add a detector to the default registry (the built-ins use this too)."""
    return REGISTRY.register(name, summary, stop_reason=stop_reason, thresholds=thresholds)
