"""One line of `octel doctor`: a check's name, `ok` / `warn` / `fail`, what it found and, unless
ok, the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["HEALTH_TIMEOUT_S", "Check", "Status"]

Status = Literal["ok", "warn", "fail"]
HEALTH_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
