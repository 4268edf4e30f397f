"""The shapes the Claude readers build: one session file in, one tree of sessions out (data only)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

from archiver.claude.runs import RunSummary
from archiver.errors import WalkError
from archiver.shape import RawJson as JsonObj

__all__ = ["ClaudeSession", "ClaudeTree", "JsonObj", "SubagentFile"]


class RunAgentDoc(TypedDict):
    """One agent of a Workflow run, as its session's archive keeps it."""

    run_id: str
    key: str | None
    label: str | None
    phase: str | None
    status: str | None  # None until the run's journal tells
    result: JsonObj | list[object] | str | float | bool | None  # what the agent returned, as JSON


@dataclass(frozen=True)
class SubagentFile:
    """One subagent transcript: its name, its bytes, its meta file's bytes (None: missing) and,
    for an agent a ``Workflow`` script launched, the run it belongs to (its folder's name)."""

    name: str
    agent_id: str
    data: bytes
    meta: bytes | None = None
    run_id: str | None = None


@dataclass
class ClaudeSession:
    session_id: str
    parent_id: str | None
    depth: int
    agent: str | None
    title: str | None
    messages: list[JsonObj]
    record: JsonObj
    tool_use_id: str | None = None
    path: str | None = None
    # a Workflow run's agent: the run id and what its journal says (label, phase, status, result)
    workflow: RunAgentDoc | None = None


@dataclass
class ClaudeTree:
    root_id: str
    sessions: list[ClaudeSession] = field(default_factory=list)
    errors: list[WalkError] = field(default_factory=list)
    # stream-json `result` messages, or the transcript's last `cost-state` line
    results: list[JsonObj] = field(default_factory=list)
    cost_state: JsonObj | None = None
    origin: str = "transcript"
    cli_version: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    unknown_types: Counter[str] = field(default_factory=Counter)
    unpriced_models: set[str] = field(default_factory=set)
    # file name -> (session id, bytes consumed, lines consumed, Built.usage): where a later
    # read of what the file gains starts, and what it merges into (no text)
    reads: dict[str, tuple[str, int, int, dict[str, list[Any]]]] = field(default_factory=dict)
    # the summary file of each Workflow run (``runs.read_runs``), kept on the root's archive
    workflow_runs: list[RunSummary] = field(default_factory=list)
    # file name -> the fingerprint of what ``reads`` consumed of it, taken from the very bytes
    # that were parsed when the file was read whole (``layout.resume_state``)
    fingerprints: dict[str, str] = field(default_factory=dict)
    # a file was rewritten as JSON Lines to be read (a JSON array, pretty-printed lines): its
    # offsets say nothing of the file, so no later read resumes from them
    rewritten: bool = False
    # session id -> redaction counts of text an earlier read archived (``TreePrior.redaction``)
    redacted_before: dict[str, dict[str, int]] = field(default_factory=dict)
