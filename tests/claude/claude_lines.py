"""Transcript lines in the shapes Claude Code writes, for tests that need layouts no fixture holds
(2.0.x files beside the session, 1.0.x sidechains, gateways, progress lines)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st
from json_mutation import any_json as _any_json
from json_mutation import replace_inside

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude"
_uuid = itertools.count(1)


def uid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuid):012d}"


def usage(inp: int = 100, out: int = 10, read: int = 0, write: int = 0, hour: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "cache_creation": {"ephemeral_5m_input_tokens": write - hour, "ephemeral_1h_input_tokens": hour},
    }


def user(sid: str, content: Any, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uid(),
        "parentUuid": parent,
        "sessionId": sid,
        "timestamp": "2026-11-30T10:00:00.000Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(
    sid: str,
    mid: str,
    blocks: list[dict[str, Any]],
    use: dict[str, Any] | None = None,
    model: str = "claude-sonnet-4-5-20250929",
    **extra: Any,
) -> list[dict[str, Any]]:
    """One line per content block, each repeating the usage, as the CLI writes them."""
    return [
        {
            "type": "assistant",
            "uuid": uid(),
            "sessionId": sid,
            "timestamp": "2026-11-30T10:00:01.000Z",
            "message": {
                "id": mid,
                "role": "assistant",
                "model": model,
                "content": [b],
                "usage": use or usage(),
            },
            **extra,
        }
        for b in blocks
    ]


def tool_use(call: str, name: str = "Bash", **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": inp}


def tool_result(call: str, text: str, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call, "content": text, "is_error": error}]


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl(lines))
    return path


# any JSON value, ints past 64 bits included: what a hostile line may hold anywhere
any_json = _any_json(64)


def mutated_lines(pool: list[Any], max_size: int = 12) -> st.SearchStrategy[list[Any]]:
    """Lines drawn from ``pool``, each perhaps with one value somewhere in it replaced by anything."""

    @st.composite
    def lines(draw: st.DrawFn) -> list[Any]:
        drawn = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_size))
        return [replace_inside(draw, line, any_json, depth=(0, 4), odds=2) for line in drawn]

    return lines()
