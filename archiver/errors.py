"""The archiver's failures, drawn once.

``FetchError`` is raised by the client for one request that could not be answered usefully;
the walk catches it and records a ``WalkError`` (plain data) instead of raising. Every failure
carries an ``error_kind`` from ``ERROR_KINDS``:

- ``timeout``, ``connection``, ``transport``: the request never got a full HTTP answer;
- ``server_error``: 5xx after the retries ran out;
- ``not_found``: 404 for a session or message (the object is gone);
- ``unsupported``: the route itself is not served by this server (404/405 without an object);
- ``http_error``: any other 4xx;
- ``malformed``: the body was not the JSON shape the route promises;
- ``empty_history``: every route family returned no messages for a session that shows activity;
- ``inconsistent``: a child's ``parentID`` disagrees with the parent that listed it;
- ``cycle``, ``duplicate``: a session id met again (as its own ancestor, or elsewhere);
- ``depth_limit``, ``size_limit``: sessions left out because the tree is deeper or wider than allowed;
- ``paging``: the message cursor repeated or the page limit ran out;
- ``truncated``, ``missing_meta``, ``orphan``: a Claude Code transcript's last line was cut short
  (being written), a subagent's meta file is missing, a subagent's session file or launching
  call was not found.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

__all__ = ["ERROR_KINDS", "ArchiveWriteError", "FetchError", "WalkError", "WalkErrorDoc"]

ERROR_KINDS = frozenset(
    {
        "timeout",
        "connection",
        "transport",
        "server_error",
        "not_found",
        "unsupported",
        "http_error",
        "malformed",
        "empty_history",
        "inconsistent",
        "cycle",
        "duplicate",
        "depth_limit",
        "size_limit",
        "paging",
        "truncated",
        "missing_meta",
        "orphan",
    }
)


class FetchError(Exception):
    """One read from the server that failed; ``error_kind`` says how."""

    def __init__(self, error_kind: str, message: str, *, path: str = "", status: int | None = None):
        super().__init__(message)
        self.error_kind = error_kind
        self.message = message
        self.path = path
        self.status = status


class ArchiveWriteError(Exception):
    """An archive file could not be written; no partial file is left behind."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"cannot write archive {path}: {reason}")
        self.path = path
        self.reason = reason


class WalkErrorDoc(TypedDict):
    """A ``WalkError`` as an archive document and a result keep it."""

    error_kind: str
    what: str
    session_id: str | None
    message: str
    path: str
    status: int | None


@dataclass(frozen=True)
class WalkError:
    """Something the walk could not fetch or had to leave out."""

    error_kind: str
    what: str
    session_id: str | None = None
    message: str = ""
    path: str = ""
    status: int | None = None

    def to_dict(self) -> WalkErrorDoc:
        return {
            "error_kind": self.error_kind,
            "what": self.what,
            "session_id": self.session_id,
            "message": self.message,
            "path": self.path,
            "status": self.status,
        }

    @classmethod
    def from_fetch(cls, err: FetchError, what: str, session_id: str | None) -> WalkError:
        return cls(err.error_kind, what, session_id, err.message, err.path, err.status)
