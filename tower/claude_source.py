"""How a live row says it is a Claude Code session's: its server is ``claude-code:<folder>``
(the config folder `octel watch --claude-dir` follows). Kept apart, with no imports, so every
reader of live rows can tell the source without loading the transcript readers."""

from __future__ import annotations

__all__ = ["CLAUDE_SERVER", "claude_server", "is_claude_server"]

CLAUDE_SERVER = "claude-code:"


def claude_server(config_dir: str) -> str:
    """The live rows' server of one config folder."""
    return f"{CLAUDE_SERVER}{config_dir}"


def is_claude_server(server: str | None) -> bool:
    return bool(server) and str(server).startswith(CLAUDE_SERVER)
