"""The evidence each built-in detector gives for its finding, one shape per signal.

A finding carries one of these (``Evidence``): a JSON object of message and part ids, counts
and the repeated signature. Evidence read back from an archive or the store, or given by an
add-on detector, is any JSON object (``OtherEvidence``): its keys are the writer's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "DenialsEvidence",
    "DoomLoopEvidence",
    "Evidence",
    "HangingCallsEvidence",
    "NoEvidence",
    "OtherEvidence",
    "RetriesEvidence",
    "RetryEvidence",
    "RetrySignal",
    "ThrashEvidence",
    "UnansweredEvidence",
    "UndoRedoEvidence",
]


class NoEvidence(TypedDict):
    """Nothing seen (a healthy finding); an episode's detector may still say it is not running."""

    active: NotRequired[bool]


class DoomLoopEvidence(TypedDict):
    """The same call, or cycle of calls, made again and again (``doom_loop``)."""

    period: int
    repetitions: float
    signature: list[str]
    polling: bool
    same_failure: str | None
    message_ids: list[str]
    part_ids: list[str]
    active: NotRequired[bool]


class UndoRedoEvidence(TypedDict):
    """Edits undone and made again (``doom_loop``, signal ``undo_redo``)."""

    signal: Literal["undo_redo"]
    flips: int
    edit: str
    message_ids: list[str]
    active: NotRequired[bool]


class ThrashEvidence(TypedDict):
    """One command failing with the same answer across small edits (``doom_loop``)."""

    signal: Literal["thrash"]
    period: int
    repetitions: int
    signature: list[str]
    same_failure: str | None
    active: bool
    message_ids: list[str]
    part_ids: list[str]


RetrySignal = Literal["failing_calls", "same_error", "provider_errors"]


class RetryEvidence(TypedDict):
    """Calls failing in a row, alike, or the provider erring (``retry_cascade``)."""

    signal: RetrySignal
    count: int
    message_ids: list[str]
    part_ids: NotRequired[list[str]]
    error: NotRequired[str | None]


class RetriesEvidence(TypedDict):
    """The provider retried, as the status said (``retry_cascade``, signal ``retries``)."""

    signal: Literal["retries"]
    attempt: int
    message: str
    gave_up: bool
    message_ids: list[str]


class DenialsEvidence(TypedDict):
    """Permission denied, and asked again (``permission_deadlock``)."""

    signal: Literal["denials"]
    count: int
    part_ids: list[str]
    rejected_requests: list[str]


class UnansweredEvidence(TypedDict):
    """Asks waiting for a reply (``permission_deadlock``)."""

    signal: Literal["unanswered"]
    requests: list[str]
    permissions: list[str]
    patterns: list[str]
    call_ids: list[str]
    waited_s: float
    idle: bool


class HangingCallsEvidence(TypedDict):
    """Tool calls left running while the session sat idle (``permission_deadlock``)."""

    signal: Literal["hanging_calls"]
    part_ids: list[str]
    message_ids: list[str]


# Read back (from an archive or the store) or given by an add-on: arbitrary JSON, kept as it came.
OtherEvidence = Mapping[str, Any]

Evidence = (
    NoEvidence
    | DoomLoopEvidence
    | UndoRedoEvidence
    | ThrashEvidence
    | RetryEvidence
    | RetriesEvidence
    | DenialsEvidence
    | UnansweredEvidence
    | HangingCallsEvidence
    | OtherEvidence
)
