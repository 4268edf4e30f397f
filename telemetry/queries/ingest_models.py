"""The typed answers of the ingestion API (`/api/v1/…`): what was stored, and whether it was new."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from telemetry.queries.fleet_models import CycleRecord

__all__ = ["CycleBegun", "CycleFinished", "DaemonBeat", "HeartbeatStored", "RunStored", "StoredRun"]


class CycleBegun(BaseModel):
    cycle: CycleRecord
    created: bool


class CycleFinished(BaseModel):
    cycle: CycleRecord
    changed: bool


class DaemonBeat(BaseModel):
    driver: str
    host: str
    pid: int | None
    last_heartbeat_at: str
    in_flight_cycle_id: str | None


class HeartbeatStored(BaseModel):
    daemon: DaemonBeat


class StoredRun(BaseModel):
    run_key: str
    task: str | None
    agent: str | None
    model: str | None
    subtype: str | None
    is_error: bool
    cost_usd: float | None


class RunStored(BaseModel):
    run: StoredRun
    created: bool
    archive: dict[str, Any] | None = Field(
        None, description="the run's conversation as archived (the archive outcome), when stream-json held it"
    )
