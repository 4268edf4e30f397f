"""What ``octel import claude`` remembers between runs, and the cleanup age it warns about.

A state file in the data folder keeps, per session, the size and modification time of each of
its files when it was last archived: a re-run opens only the sessions whose files changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from archiver.claude.layout import SessionFiles

__all__ = ["cleanup_days", "key_of", "load_state", "near_cleanup", "signature"]

_DAY = 86_400.0
# warn this many days before Claude Code's cleanup would delete a transcript
_WARN_DAYS = 5


def signature(files: SessionFiles) -> list[list[Any]]:
    out: list[list[Any]] = []
    for p in files.paths():
        try:
            st = p.stat()
        except OSError:
            continue
        out.append([str(p), st.st_size, st.st_mtime_ns])
    return out


def key_of(files: SessionFiles) -> str:
    return f"{files.project}/{files.session_id}"


def load_state(path: Path) -> dict[str, Any]:
    try:
        state = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return state if isinstance(state, dict) else {}


def cleanup_days(config_dir: Path) -> int:
    """Claude Code's ``cleanupPeriodDays`` (30 when its settings do not say)."""
    try:
        conf = orjson.loads((config_dir / "settings.json").read_bytes())
        days = conf.get("cleanupPeriodDays") if isinstance(conf, dict) else None
    except (OSError, orjson.JSONDecodeError):
        days = None
    return days if isinstance(days, int) and not isinstance(days, bool) and days > 0 else 30


def near_cleanup(sig: Iterable[Sequence[Any]], days: int, now: float) -> bool:
    """The session was last written long enough ago that the CLI will soon delete it."""
    newest = max((int(s[2]) for s in sig), default=None)
    return newest is not None and now - newest / 1e9 > (days - _WARN_DAYS) * _DAY
