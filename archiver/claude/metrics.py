"""Per-turn metrics and the cost check of Claude Code sessions (pure).

A turn is one assistant message (one API answer); its entry has the same fields as an OpenCode
turn (``archiver.metrics.per_turn``), so totals, rollups, the index and the console read both
alike. A call's failure is known only from the later ``tool_result`` (``is_error``).

The cost check sets the tree's own numbers beside what the CLI reported (a ``result``'s
``total_cost_usd`` and ``modelUsage``, else the transcript's last ``cost-state`` line): both are
shown, and a difference above half a percent (and above $0.0001) is flagged, as is a model
the price table does not know. stream-json carries each
message's usage as it started (``output_tokens`` 1), so a tree read from it is not compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from archiver.claude.prices import price_source
from archiver.shape import RawJson as JsonObj
from archiver.shape import as_num, as_obj

__all__ = ["cost_check", "per_turn"]


def per_turn(messages: Sequence[Mapping[str, Any]]) -> list[JsonObj]:
    """One entry per assistant message, in order."""
    failed = {
        str(p.get("tool_use_id"))
        for m in messages
        for p in m.get("parts") or []
        if p.get("type") == "tool_result" and p.get("is_error") is True
    }
    out: list[JsonObj] = []
    before: float | None = None  # when the message before it was written: the request went out then
    for index, m in enumerate(messages):
        info = as_obj(m.get("info"))
        t = as_obj(info.get("time"))
        written, completed = as_num(t.get("created")), as_num(t.get("completed"))
        if info.get("role") != "assistant":
            before = completed if completed is not None else before
            continue
        created = before if before is not None and written is not None and before <= written else written
        before = completed if completed is not None else before
        calls = [str(p.get("id")) for p in m.get("parts") or [] if p.get("type") == "tool_use"]
        tok = as_obj(info.get("tokens"))
        cache = as_obj(tok.get("cache"))
        err = as_obj(info.get("error"))
        out.append(
            {
                "message_id": info.get("id"),
                "index": index,
                "agent": info.get("agent"),
                "model": info.get("modelID"),
                "provider": info.get("providerID"),
                "created": created,
                "completed": completed,
                "duration_ms": completed - created if created is not None and completed is not None else None,
                # a transcript line is written once its block is complete
                "in_flight": False,
                "tokens": {
                    "input": int(tok.get("input") or 0),
                    "output": int(tok.get("output") or 0),
                    "reasoning": 0,
                    "cache_read": int(cache.get("read") or 0),
                    "cache_write": int(cache.get("write") or 0),
                },
                "cost": float(info.get("cost") or 0.0),
                "tool_calls": len(calls),
                "tool_errors": sum(1 for c in calls if c in failed),
                "finish": info.get("finish"),
                "error": err.get("name") if err else None,
                "error_message": str(as_obj(err.get("data")).get("message", ""))[:500] if err else None,
                "summary": False,
            }
        )
    return out


def _reported(
    results: Sequence[Mapping[str, Any]], cost_state: Mapping[str, Any] | None
) -> tuple[float | None, str | None, Mapping[str, Any]]:
    if results:
        last = results[-1]  # every result repeats the run's running total; the last is the whole
        return as_num(last.get("total_cost_usd")), "result", as_obj(last.get("modelUsage"))
    if cost_state:
        return as_num(cost_state.get("totalCostUSD")), "cost-state", as_obj(cost_state.get("modelUsage"))
    return None, None, {}


def cost_check(
    turns: Iterable[Mapping[str, Any]],
    *,
    results: Sequence[Mapping[str, Any]] = (),
    cost_state: Mapping[str, Any] | None = None,
    unpriced_models: Iterable[str] = (),
    comparable: bool = True,
) -> JsonObj:
    """The tree's computed cost and tokens per model beside the CLI's, and whether they differ."""
    models: dict[str, JsonObj] = {}
    computed = 0.0
    for t in turns:
        tok = as_obj(t.get("tokens"))
        row = models.setdefault(
            str(t.get("model")), {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": 0.0}
        )
        for k in ("input", "output", "cache_read", "cache_write"):
            row[k] += int(tok.get(k) or 0)
        row["cost"] += float(t.get("cost") or 0.0)
        computed += float(t.get("cost") or 0.0)
    reported, source, usage = _reported(results, cost_state)
    reported_models = {
        str(name): {
            "input": int(as_obj(u).get("inputTokens") or 0),
            "output": int(as_obj(u).get("outputTokens") or 0),
            "cache_read": int(as_obj(u).get("cacheReadInputTokens") or 0),
            "cache_write": int(as_obj(u).get("cacheCreationInputTokens") or 0),
            "cost": as_num(as_obj(u).get("costUSD")),
        }
        for name, u in usage.items()
    }
    diff = computed - reported if reported is not None else None
    unpriced = sorted(set(unpriced_models))
    mismatch = bool(comparable and diff is not None and abs(diff) > max(0.0001, 0.005 * abs(reported or 0.0)))
    return {
        "computed_usd": computed,
        "reported_usd": reported,
        "reported_from": source,
        "difference_usd": diff,
        "comparable": comparable,
        "mismatch": mismatch or bool(comparable and reported is not None and unpriced),
        "unpriced_models": unpriced,
        "models": {k: v for k, v in models.items() if k != "<synthetic>"},
        "reported_models": reported_models,
        "prices": price_source(),
    }
