"""URLs as they may be shown: a server URL may carry credentials (``http://user:pass@host``),
which no log line, error or check prints."""

from __future__ import annotations

import re

__all__ = ["without_credentials"]

# scheme://userinfo@ : the userinfo runs to the last "@" before the path, query or fragment
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#@]*(?:@[^/\s?#@]*)*@")


def without_credentials(text: str) -> str:
    """``text`` with the ``user:pass@`` part of every URL in it taken out."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text
