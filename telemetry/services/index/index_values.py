"""What the indexers write: the `session_index` columns of one record, and of its findings.

`indexing` and `index_batch` build the same rows from a `SessionRecord`; these name their
columns (a test holds them to the tables'), so a column written is one the table has.
`UsageMarks` are a row's `counted_*` columns: the highest usage ever added to the counters.
"""

# no `from __future__ import annotations`: `NotRequired` must mark the optional keys at run
# time too (`__optional_keys__`)
from datetime import datetime
from typing import Final, NotRequired, TypedDict

from archiver.shape import RawJson

__all__ = ["NO_MARKS", "CountedValues", "FindingValues", "IndexValues", "UsageMarks"]


class UsageMarks(TypedDict):
    """The high-water marks of a session's usage counters (never lowered)."""

    counted_tokens_input: int
    counted_tokens_output: int
    counted_tokens_reasoning: int
    counted_tokens_cache_read: int
    counted_tokens_cache_write: int
    counted_cost_usd: float


# the marks of a session never counted (read only)
NO_MARKS: Final[UsageMarks] = {
    "counted_tokens_input": 0,
    "counted_tokens_output": 0,
    "counted_tokens_reasoning": 0,
    "counted_tokens_cache_read": 0,
    "counted_tokens_cache_write": 0,
    "counted_cost_usd": 0.0,
}


class IndexValues(UsageMarks):
    """A `session_index` row by name, as an indexer inserts or updates it; `cycle_id` only
    when a cycle names the record, `driver` once it is looked up."""

    session_id: str
    root_session_id: str
    parent_session_id: str | None
    depth: int
    label: str | None
    agent: str | None
    model: str | None
    title: str | None
    directory: str | None
    opencode_version: str | None
    created_at: datetime | None
    updated_at: datetime | None
    archived_at: datetime
    duration_s: float | None
    turn_count: int
    message_count: int
    in_flight: bool
    tokens_input: int
    tokens_output: int
    tokens_reasoning: int
    tokens_cache_read: int
    tokens_cache_write: int
    cost_usd: float
    subtree_tokens: int
    subtree_cost_usd: float
    subtree_session_count: int
    verdict: str
    worst_detector: str | None
    finding_count: int
    walk_error_count: int
    error_kind: str | None
    archive_path: str
    schema_version: int
    content_hash: str
    source: str
    reported_cost_usd: float | None
    cost_mismatch: bool
    unpriced_models: str | None
    cycle_id: NotRequired[str | None]
    driver: NotRequired[str | None]


class FindingValues(TypedDict):
    """What a finding says, as its `finding` row holds it (`evidence` as the detector wrote it)."""

    verdict: str
    score: float
    start_index: int
    evidence: RawJson | None


class CountedValues(TypedDict):
    """A `counted_finding` row: this (session, source, detector, verdict) was counted once."""

    session_id: str
    source: str
    detector: str
    verdict: str
