"""The normalised message stream the detectors read.

Every source (OpenCode's classic routes, its `/api/...` routes, archive files) is converted into
these frozen records first, so a detector never sees raw JSON. Strings are already trimmed and
tool inputs already canonical (JSON with sorted keys), which keeps the detectors cheap and pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Compaction",
    "Message",
    "Part",
    "Patch",
    "PermissionEvent",
    "Reasoning",
    "Retry",
    "Role",
    "StatusSample",
    "StatusType",
    "StepFinish",
    "Text",
    "ToolCall",
    "ToolStatus",
]

Role = Literal["user", "assistant", "system"]
ToolStatus = Literal["pending", "running", "completed", "error"]
StatusType = Literal["busy", "retry", "idle"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call; `canonical_input` is its input as JSON with sorted keys."""

    part_id: str
    tool: str
    canonical_input: str
    status: ToolStatus
    output: str = ""
    error: str = ""
    exit_code: int | None = None
    call_id: str = ""
    # The call was cut short (abort while it waited or ran).
    interrupted: bool = False
    # The tool stopped the command when it ran past its timeout.
    timed_out: bool = False
    # The client refused to run it (a permission denied), when the source says so apart from
    # the error text (the Claude Code CLI's `permission_denied`).
    denied: bool = False


@dataclass(frozen=True, slots=True)
class Text:
    part_id: str
    text: str
    synthetic: bool = False


@dataclass(frozen=True, slots=True)
class Reasoning:
    part_id: str
    text: str


@dataclass(frozen=True, slots=True)
class StepFinish:
    part_id: str
    reason: str = ""
    output_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Retry:
    part_id: str
    attempt: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class Compaction:
    part_id: str
    auto: bool = False
    overflow: bool = False


@dataclass(frozen=True, slots=True)
class Patch:
    """Files changed by the step before it."""

    part_id: str
    files: tuple[str, ...] = ()


Part = ToolCall | Text | Reasoning | StepFinish | Retry | Compaction | Patch


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a session, in stream order (`index` counts from 0)."""

    id: str
    role: Role
    index: int
    parts: tuple[Part, ...] = ()
    finish: str | None = None
    error: str | None = None  # the error's name, e.g. "MessageAbortedError"
    error_message: str = ""
    output_tokens: int = 0
    reasoning_tokens: int = 0
    completed: bool = True
    agent: str = ""
    summary: bool = False  # a compaction summary written by the model


@dataclass(frozen=True, slots=True)
class PermissionEvent:
    """A permission ask or its reply, as seen on the event stream."""

    kind: Literal["asked", "replied"]
    request_id: str
    permission: str = ""  # e.g. "bash", "doom_loop", "external_directory", "read"
    patterns: tuple[str, ...] = ()
    reply: str = ""  # "once" | "always" | "reject" on a reply
    call_id: str = ""
    t: float | None = None


@dataclass(frozen=True, slots=True)
class StatusSample:
    """The session's status at one moment; `t` is seconds on the recorder's clock."""

    type: StatusType
    attempt: int = 0
    t: float | None = None
    message: str = ""
    # Permission requests pending at that moment (ids), when the recorder saw them.
    pending_permissions: tuple[str, ...] = ()
