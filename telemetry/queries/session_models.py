"""The typed answer of the session list: a page of session index rows (the web API's
`response_model` and the CLI's `--json`), apart from the other answers of
`telemetry.queries.models` so the list builds only its own."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from archiver.metrics import TOKEN_KINDS

__all__ = ["SessionPage", "SessionRecord", "SessionVerdict", "Tokens", "stored_tokens"]

# A session's verdict: the detectors' worst, or "empty" when it has no turn to judge.
SessionVerdict = Literal["healthy", "suspect", "stuck", "empty"]


class Tokens(BaseModel):
    """Tokens by kind. `input` excludes cache reads and writes; `output` excludes reasoning."""

    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, k) for k in TOKEN_KINDS)


def stored_tokens(row: object) -> dict[str, int]:
    """A stored row's `tokens_<kind>` columns (an index row, a live row), by kind."""
    return {k: getattr(row, f"tokens_{k}") for k in TOKEN_KINDS}


class SessionRecord(BaseModel):
    """One row of the session index."""

    session_id: str
    root_session_id: str
    parent_session_id: str | None
    depth: int
    label: str | None
    cycle_id: str | None
    agent: str | None
    model: str | None
    title: str | None
    directory: str | None
    opencode_version: str | None
    opencode_generation: int | None = Field(
        None, description="OpenCode API generation (1: 1.x routes, 2: /api only); null for Claude Code"
    )
    created_at: str | None
    updated_at: str | None
    archived_at: str | None
    duration_s: float | None
    turn_count: int
    message_count: int
    in_flight: bool
    tokens: Tokens
    tokens_total: int
    cache_hit_ratio: float | None = Field(description="cache_read / (input + cache_read); null if both 0")
    cost_usd: float
    subtree_tokens: int = Field(description="tokens of the indexed subtree, all kinds together")
    subtree_cost_usd: float
    subtree_session_count: int
    verdict: SessionVerdict
    worst_detector: str | None
    finding_count: int
    walk_error_count: int
    error_kind: str | None
    archive_path: str
    schema_version: int
    source: Literal["opencode", "claude_code"] = Field("opencode", description="which agent wrote it")
    reported_cost_usd: float | None = Field(None, description="a Claude Code root: the cost its CLI reported")
    cost_mismatch: bool = Field(False, description="octel's cost of the tree differs from the reported one")
    unpriced_models: list[str] = Field(
        default_factory=list, description="models the price table does not know"
    )


class SessionPage(BaseModel):
    """A page of sessions, newest archived first; `next_cursor` asks for the next."""

    items: list[SessionRecord]
    next_cursor: str | None
