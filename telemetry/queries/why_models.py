"""The typed answer of `why`: one verdict on a session or cycle, decisive evidence first, and
the live row when the session runs now (apart from `telemetry.queries.fleet_models`, so the
fleet's other answers do not load the live view)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from telemetry.queries.live import LiveSessionOut

__all__ = ["WhyAnswer", "WhyEvidence"]


class WhyEvidence(BaseModel):
    source: str = Field(description="finding, cycle, index, archive, live or action")
    detail: str


class WhyAnswer(BaseModel):
    """Why a session or cycle stopped: one verdict, decisive evidence first."""

    id: str
    kind: Literal["session", "cycle"]
    session_id: str | None
    cycle_id: str | None
    code: str
    verdict: str
    summary: str
    evidence: list[WhyEvidence]
    live: LiveSessionOut | None = None  # the live row, when the session runs now
