"""The typed answers about archived sessions: one pydantic model per answer.

The web API declares them as `response_model` (so the OpenAPI describes every answer) and the
CLI's `--json` prints the same models. Times are ISO 8601 text in UTC, as the queries write them.
The session list's answer (`SessionPage`, the rows it holds) is defined apart, in
`telemetry.queries.session_models`, and named here too.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from archiver.metrics import TOKEN_KINDS
from archiver.shape import RawJson
from detectors.findings import Verdict
from telemetry.queries.session_models import SessionPage, SessionRecord, SessionVerdict, Tokens, stored_tokens

__all__ = [
    "TOKEN_KINDS",
    "ArchiveInfo",
    "ArchivedItem",
    "ArchivedPage",
    "EvidenceLink",
    "FindingRecord",
    "LinkedCycle",
    "MessagePage",
    "MessageView",
    "SessionDetail",
    "SessionPage",
    "SessionRecord",
    "SessionVerdict",
    "Tokens",
    "TraceRef",
    "TreeNode",
    "TurnRow",
    "stored_tokens",
]


class EvidenceLink(BaseModel):
    """A piece of a finding's evidence: a part or message id, named by turn and tool."""

    id: str
    kind: Literal["part", "message"]
    label: str = Field(description='e.g. "turn 2 · bash"')


class FindingRecord(BaseModel):
    detector: str
    verdict: Verdict
    score: float
    start_index: int | None
    evidence: dict[str, Any]
    source: str = Field(description="archive or live")
    detected_at: str | None
    sentence: str | None = Field(None, description="what the detector saw, in one sentence")
    evidence_links: list[EvidenceLink] = Field(default_factory=list)


class LinkedCycle(BaseModel):
    """The dispatcher cycle a session belongs to (named by its archive or posted with it)."""

    cycle_id: str
    driver: str
    started_at: str
    ended_at: str | None
    in_flight: bool
    terminal_state: str | None
    worker_outcome: str | None
    error_kind: str | None
    session_id: str | None


class TreeNode(BaseModel):
    """A session in its subtree: own numbers, and numbers rolled up over its descendants."""

    session_id: str
    parent_session_id: str | None
    depth: int
    agent: str | None
    model: str | None
    title: str | None
    verdict: SessionVerdict
    in_flight: bool
    turn_count: int
    cost_usd: float
    tokens: Tokens
    tokens_total: int
    children: list[TreeNode]
    subtree_cost_usd: float
    subtree_tokens: Tokens
    subtree_tokens_total: int
    subtree_session_count: int


class TurnRow(BaseModel):
    """One assistant turn of an archive, with ISO times and flat token columns."""

    index: int
    message_id: str | None
    agent: str | None
    model: str | None
    created_at: str | None
    completed_at: str | None
    duration_s: float | None
    in_flight: bool
    tokens_input: int
    tokens_output: int
    tokens_reasoning: int
    tokens_cache_read: int
    tokens_cache_write: int
    cost_usd: float
    tool_calls: int
    tool_errors: int
    finish: str | None
    error: str | None


class ArchiveInfo(BaseModel):
    """The session's archive file: whether it could be read, and what the walk and redaction did."""

    file: str
    available: bool
    error: str | None
    walk_errors: list[RawJson]  # what the walk could not fetch, as the archive says
    redaction: dict[str, int] = Field(description="values replaced, by redaction rule")


class TraceRef(BaseModel):
    """Where the session is in the OpenTelemetry trace its tree is exported as (docs/otel.md)."""

    trace_id: str = Field(description="32 hex digits, derived from the root session id")
    span_id: str = Field(description="16 hex digits: this session's invoke_agent span")
    url: str | None = Field(description="the OCTEL_OTEL_TRACE_URL template filled in; null without one")


class SessionDetail(BaseModel):
    """One session: its record, findings, subtree, per-turn rows and its archive's state."""

    session: SessionRecord
    cycle: LinkedCycle | None = None
    parent_session_id: str | None
    root_session_id: str
    findings: list[FindingRecord]
    tree: TreeNode
    per_turn: list[TurnRow] | None = Field(description="null when the archive file cannot be read")
    archive: ArchiveInfo
    trace: TraceRef | None = None


class MessageView(BaseModel):
    """One archived message for the timeline: a summary of its info and its parts as stored."""

    index: int
    id: str | None
    role: str | None
    agent: str | None = None
    created_at: str | None = None
    completed_at: str | None = None
    duration_s: float | None = None
    in_flight: bool = False
    tokens: Tokens | None = None
    cost_usd: float | None = None
    finish: str | None = None
    error: str | None = None
    parts: list[RawJson]  # the parts as the agent sent them (redacted)


class MessagePage(BaseModel):
    session_id: str
    total: int
    offset: int
    limit: int
    prev_offset: int | None
    next_offset: int | None
    items: list[MessageView]
    redaction: dict[str, int]


class ArchivedItem(BaseModel):
    file: str
    session_id: str
    root_session_id: str
    depth: int
    label: str | None
    agent: str | None
    title: str | None
    verdict: SessionVerdict
    archived_at: str | None
    cost_usd: float


class ArchivedPage(BaseModel):
    items: list[ArchivedItem]
    count: int
    limit: int
    truncated: bool
