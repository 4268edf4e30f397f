"""What dispatchers send: the validated shapes of cycle begins and finishes, heartbeats and
Claude CLI runs (`telemetry.services.ingest.ingest` writes them)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    model_validator,
)

from archiver.bounds import INT32_MAX, MAX_SECONDS, JsonObject, iso_time_only, no_nul
from telemetry.timeutil import checked_utc

__all__ = ["AgentRunIn", "ConflictError", "CycleBegin", "CycleFinish", "HeartbeatIn"]

_Text = AfterValidator(no_nul)


def _not_blank(v: str) -> str:
    if not v:
        raise ValueError("must not be blank")
    return v


# lengths are checked as sent (what the published schema says), whitespace stripped after
_Strip = AfterValidator(str.strip)
_Filled = AfterValidator(_not_blank)
# what the checks after the lengths refuse, said in the published schema too (only there: the
# server's own messages name the field): no NUL, and a name not all whitespace
_NO_NUL = Field(json_schema_extra={"pattern": "^[^\\u0000]*$"})
_FILLED = Field(json_schema_extra={"pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"})
Name = Annotated[str, StringConstraints(min_length=1, max_length=100), _FILLED, _Strip, _Filled, _Text]
Ident = Annotated[str, StringConstraints(min_length=1, max_length=200), _FILLED, _Strip, _Filled, _Text]
Label = Annotated[str, StringConstraints(max_length=200), _NO_NUL, _Strip, _Text]


def _whole(v: object) -> object:
    """A JSON number with no fraction (`484.0`, `1e3`) is an integer to JSON Schema, as the
    published schema says: taken as one. Anything else goes on to the strict check."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


# counts, pids and exit codes are INTEGER columns: 32 bits on PostgreSQL; strict, so `false`,
# "5" or 4.5 is refused as the schema says rather than read as a number
_Int = BeforeValidator(_whole)
# (the validator last: before the constraints it would hide them from the published schema)
Count = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX), _Int]
Pid = Annotated[int, Strict(), Field(ge=1, le=INT32_MAX), _Int]
ExitCode = Annotated[int, Strict(), Field(ge=-INT32_MAX - 1, le=INT32_MAX), _Int]
Seconds = Annotated[float, Strict(), Field(ge=0, le=MAX_SECONDS)]
UtcTime = Annotated[datetime, BeforeValidator(iso_time_only), AfterValidator(checked_utc)]


class ConflictError(ValueError):
    """The request contradicts what is stored (for example a cycle id owned by another driver)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class CycleBegin(_Strict):
    cycle_id: Ident
    driver: Name
    started_at: UtcTime | None = None
    host: Label | None = None
    pid: Pid | None = None
    candidates_count: Count | None = None
    claims_count: Count | None = None
    swept_count: Count | None = None
    session_id: Ident | None = None
    meta: JsonObject | None = None


class CycleFinish(_Strict):
    """A finish; `ended_at` may not come before the start it or the stored cycle carries."""

    cycle_id: Ident
    driver: Name
    terminal_state: Name
    worker_outcome: Name | None = None
    error_kind: Label | None = None
    started_at: UtcTime | None = None
    ended_at: UtcTime | None = None
    session_id: Ident | None = None
    candidates_count: Count | None = None
    claims_count: Count | None = None
    swept_count: Count | None = None
    processed_count: Count | None = None
    escalated_count: Count | None = None
    worker_wallclock_seconds: Seconds | None = None
    meta: JsonObject | None = None

    @model_validator(mode="after")
    def _ends_after_start(self) -> CycleFinish:
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        if self.ended_at and self.worker_wallclock_seconds and self.started_at is None:
            try:  # the start a finish without one gets
                self.ended_at - timedelta(seconds=self.worker_wallclock_seconds)
            except OverflowError:
                raise ValueError("worker_wallclock_seconds reaches back before year 1") from None
        return self


class HeartbeatIn(_Strict):
    driver: Name
    host: Annotated[str, StringConstraints(min_length=1, max_length=255), _FILLED, _Strip, _Filled, _Text]
    pid: Pid | None = None
    in_flight_cycle_id: Ident | None = None
    at: UtcTime | None = None


class AgentRunIn(_Strict):
    task: Label | None = None
    agent: Name | None = None
    exit_code: ExitCode | None = None
    # The CLI's result text can be long (a stream-json transcript); 64 MiB bounds a mistake.
    result: JsonObject | Annotated[str, StringConstraints(max_length=64 * 2**20)]
