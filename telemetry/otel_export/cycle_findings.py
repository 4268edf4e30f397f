"""The dispatcher cycle of a tree (`CycleFacts`), its dispatch_cycle span's attributes, and the
findings' evaluation events (pure; conventions.py documents every key). Both are rare (a cycle
per tree at most, a finding per pattern), so they are written plainly: the cycle's fields with
`Key.v`, a finding as an event record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver.shape import as_obj
from detectors import REGISTRY
from telemetry.otel_export.fields import Key
from telemetry.otel_export.spans import AttrValue, SpanEvent
from telemetry.otel_export.times import ms_to_ns

__all__ = ["EVALUATION_EVENT", "CycleFacts", "cycle_attributes", "cycle_id_attribute", "finding_event"]

EVALUATION_EVENT = "gen_ai.evaluation.result"

_SESSION, _ERROR = Key("session.id"), Key("error.type")
_CYCLE_KIND = Key("openinference.span.kind").s("CHAIN")
_CYCLE_ID, _DRIVER = Key("octel.cycle.id"), Key("octel.cycle.driver")
_CYCLE_IN_FLIGHT = Key("octel.cycle.in_flight")
_COUNTS = tuple(
    (n, Key(f"octel.cycle.{n}")) for n in ("candidates", "claims", "swept", "processed", "escalated")
)
_TERMINAL, _OUTCOME = Key("octel.cycle.terminal_state"), Key("octel.cycle.worker_outcome")


@dataclass(frozen=True, slots=True)
class CycleFacts:
    """The dispatcher cycle that names a root session (times in Unix milliseconds)."""

    cycle_id: str
    driver: str
    started_ms: float
    ended_ms: float | None = None
    counts: Mapping[str, int | None] = field(default_factory=dict)  # candidates, claims, …
    terminal_state: str | None = None
    worker_outcome: str | None = None
    error_kind: str | None = None


def cycle_id_attribute(cycle_id: str) -> bytes:
    """`octel.cycle.id`, which the root's invoke_agent span carries after its own attributes."""
    return _CYCLE_ID.s(cycle_id)


def cycle_attributes(
    cycle_id: str,
    driver: str,
    counts: Mapping[str, int | None],
    terminal_state: str | None,
    worker_outcome: str | None,
    error_kind: str | None,
    root: str,
    in_flight: bool,
) -> bytes:
    a = [
        _CYCLE_KIND,
        _SESSION.v(root),
        _CYCLE_ID.v(cycle_id),
        _DRIVER.v(driver),
        _CYCLE_IN_FLIGHT.v(in_flight),
    ]
    for name, key in _COUNTS:
        v = counts.get(name)
        if isinstance(v, int):
            a.append(key.v(v))
    a += (_TERMINAL.put(terminal_state), _OUTCOME.put(worker_outcome), _ERROR.put(error_kind))
    return b"".join(a)


def _summary(detector: str) -> str:
    spec = REGISTRY.spec(detector)
    return spec.summary if spec is not None else "a pattern this detector looks for"


def finding_event(f: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], fallback_ns: int) -> SpanEvent:
    """A detector finding as a `gen_ai.evaluation.result` event, at the message where it began."""
    detector = str(f.get("detector") or "unknown")
    verdict = str(f.get("verdict") or "healthy")
    score = float(f.get("score") or 0.0)
    start = f.get("start_index")
    at = fallback_ns
    where = ""
    if isinstance(start, int) and 0 <= start < len(messages):
        at = ms_to_ns(
            as_obj(as_obj(as_obj(messages[start]).get("info")).get("time")).get("created"), fallback_ns
        )
        where = f", from message {start}"
    explanation = f"{detector} {verdict} (score {score:.2f}): {_summary(detector)}{where}."
    attrs: dict[str, AttrValue] = {
        "gen_ai.evaluation.name": detector,
        "gen_ai.evaluation.score.value": score,
        "gen_ai.evaluation.score.label": verdict,
        "gen_ai.evaluation.explanation": explanation,
    }
    if isinstance(start, int):
        attrs["octel.finding.start_index"] = start
    return SpanEvent(EVALUATION_EVENT, at, attrs)
