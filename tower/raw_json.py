"""The one name for a JSON object octel reads from outside and has not given a shape to."""

from __future__ import annotations

from typing import Any

__all__ = ["RawJson"]

RawJson = dict[str, Any]
"""A JSON object exactly as an outside source sent it: an OpenCode server's session, message,
part or event, a Claude Code transcript line or CLI result, an archive document read back, an
HTTP body before it is validated, the OpenAPI document FastAPI generates. Nothing is promised
about its keys; readers go through `archiver.shape` (``as_obj``, ``as_text``, ``as_num``)."""
