"""Per-turn metrics, session totals and subtree rollups from OpenCode messages (pure).

A turn is one assistant message (one LLM step). Numbers come from the message ``info`` only,
never added to the ``step-finish`` parts' numbers, which repeat them. OpenCode's ``tokens.input``
excludes cache reads and writes, ``output`` excludes reasoning, and a session's own cost
excludes its children: the subtree rollup sums each session's own totals explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = ["TOKEN_KINDS", "cache_hit_ratio", "per_turn", "rollup", "totals"]

# The token kinds everywhere in octel (archives, the index, costs, metrics labels), said once.
TOKEN_KINDS = ("input", "output", "reasoning", "cache_read", "cache_write")


def cache_hit_ratio(cache_read: float, input_tokens: float) -> float | None:
    """cache_read / (input + cache_read), as input excludes cache reads; None when both are 0."""
    denom = input_tokens + cache_read
    return round(cache_read / denom, 4) if denom else None


def _num(v: object) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _int(v: object) -> int:
    return int(_num(v))


def _tokens(info: Mapping[str, Any]) -> dict[str, int]:
    t = as_obj(info.get("tokens"))
    cache = as_obj(t.get("cache"))
    return {
        "input": _int(t.get("input")),
        "output": _int(t.get("output")),
        "reasoning": _int(t.get("reasoning")),
        "cache_read": _int(cache.get("read")),
        "cache_write": _int(cache.get("write")),
    }


def per_turn(messages: Iterable[Mapping[str, Any]]) -> list[JsonObj]:
    """One entry per assistant message, in order."""
    out: list[JsonObj] = []
    for index, m in enumerate(messages):
        info = as_obj(m.get("info"))
        if info.get("role") != "assistant":
            continue
        parts = [p for p in m.get("parts") or [] if isinstance(p, Mapping)]
        tools = [p for p in parts if p.get("type") == "tool"]
        t = as_obj(info.get("time"))
        created = t.get("created") if isinstance(t.get("created"), int | float) else None
        completed = t.get("completed") if isinstance(t.get("completed"), int | float) else None
        err = as_obj(info.get("error"))
        out.append(
            {
                "message_id": info.get("id"),
                "index": index,
                "agent": info.get("agent") or info.get("mode"),
                "model": info.get("modelID"),
                "provider": info.get("providerID"),
                "created": created,
                "completed": completed,
                "duration_ms": (completed - created)
                if created is not None and completed is not None
                else None,
                "in_flight": completed is None,
                "tokens": _tokens(info),
                "cost": _num(info.get("cost")),
                "tool_calls": len(tools),
                "tool_errors": sum(1 for p in tools if as_obj(p.get("state")).get("status") == "error"),
                "finish": info.get("finish"),
                "error": err.get("name") if err else None,
                "error_message": str(as_obj(err.get("data")).get("message", ""))[:500] if err else None,
                "summary": bool(info.get("summary")),
            }
        )
    return out


def totals(messages: Sequence[Mapping[str, Any]], turns: list[JsonObj]) -> JsonObj:
    """A session's own totals (children excluded), from its messages and per-turn entries."""
    tokens = {k: sum(t["tokens"][k] for t in turns) for k in TOKEN_KINDS}
    created = [
        _num(as_obj(as_obj(m.get("info")).get("time")).get("created"))
        for m in messages
        if as_obj(as_obj(m.get("info")).get("time")).get("created") is not None
    ]
    done = [t["completed"] for t in turns if t["completed"] is not None]
    first = min(created) if created else None
    last = max([*done, *created]) if created or done else None
    return {
        "messages": len(messages),
        "user_messages": sum(1 for m in messages if as_obj(m.get("info")).get("role") == "user"),
        "turns": len(turns),
        "in_flight_turns": sum(1 for t in turns if t["in_flight"]),
        "errored_turns": sum(1 for t in turns if t["error"]),
        "tool_calls": sum(t["tool_calls"] for t in turns),
        "tool_errors": sum(t["tool_errors"] for t in turns),
        "tokens": tokens,
        "tokens_total": sum(tokens.values()),
        "cost": sum(t["cost"] for t in turns),
        "first_created": first,
        "last_activity": last,
        "duration_ms": (last - first) if first is not None and last is not None else None,
    }


def rollup(own: Mapping[str, Mapping[str, Any]], parents: Mapping[str, str | None]) -> dict[str, JsonObj]:
    """Subtree sums for each session: its own totals plus every descendant's own totals."""
    kids: dict[str, list[str]] = {sid: [] for sid in own}
    for sid, parent in parents.items():
        if parent is not None and parent in kids and sid in own:
            kids[parent].append(sid)
    memo: dict[str, JsonObj] = {}

    def visit(sid: str, path: frozenset[str]) -> JsonObj:
        if sid in memo:
            return memo[sid]
        t = own[sid]
        acc: JsonObj = {
            "sessions": 1,
            "turns": int(t["turns"]),
            "tool_calls": int(t["tool_calls"]),
            "tokens": dict(t["tokens"]),
            "cost": float(t["cost"]),
        }
        for child in kids[sid]:
            if child in path:  # a cycle in the parent links is not summed twice
                continue
            c = visit(child, path | {child})
            acc["sessions"] += c["sessions"]
            acc["turns"] += c["turns"]
            acc["tool_calls"] += c["tool_calls"]
            acc["cost"] += c["cost"]
            for k in TOKEN_KINDS:
                acc["tokens"][k] += c["tokens"][k]
        acc["tokens_total"] = sum(acc["tokens"].values())
        memo[sid] = acc
        return acc

    return {sid: visit(sid, frozenset({sid})) for sid in own}
