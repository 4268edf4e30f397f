"""One line of `octel doctor`: a check's name, `ok` / `warn` / `fail`, what it found and, unless
ok, the fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

__all__ = ["HEALTH_TIMEOUT_S", "Check", "Status"]

Status = Literal["ok", "warn", "fail"]
HEALTH_TIMEOUT_S = 3.0


class CheckDoc(TypedDict):
    name: str
    status: Status
    detail: str
    fix: str


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> CheckDoc:
        return CheckDoc(name=self.name, status=self.status, detail=self.detail, fix=self.fix)
