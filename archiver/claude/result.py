"""Read a Claude Code CLI result (`--output-format json`, or stream-json's final `result` event)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, TypedDict

from archiver.bounds import INT32_MAX, check_json
from archiver.shape import RawJson

__all__ = ["ClaudeResultError", "ClaudeRun", "parse_claude_result"]


class ClaudeRun(TypedDict):
    """The columns of an agent run, read from one CLI result."""

    run_key: str
    session_id: str | None
    model: str | None
    subtype: str | None
    is_error: bool
    num_turns: int | None
    duration_ms: int | None
    duration_api_ms: int | None
    cost_usd: float
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    model_usage: RawJson  # the CLI's own, by model
    raw: RawJson  # the whole result, as the CLI printed it


class ClaudeResultError(ValueError):
    """The input is not a Claude CLI result object; the message names the field."""


def _int(d: Mapping[str, Any], key: str, where: str = "usage.") -> int:
    v = d.get(key, 0)
    if v is None:
        return 0
    # INTEGER columns: at most 2^31 - 1 on PostgreSQL
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= INT32_MAX:
        raise ClaudeResultError(f"{where}{key} must be a number from 0 to {INT32_MAX}")
    return int(v)


def _text(d: Mapping[str, Any], key: str, limit: int) -> str | None:
    """An optional text field that fits its column (and holds no NUL, which PostgreSQL refuses)."""
    v = d.get(key)
    if v is None or v == "":
        return None
    if not isinstance(v, str) or len(v) > limit or "\x00" in v:
        raise ClaudeResultError(f"{key} must be text of at most {limit} characters")
    return v


def _model_cost(usage: Any) -> float:
    cost = usage.get("costUSD", 0) if isinstance(usage, Mapping) else 0
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    return None if d.get(key) is None else _int(d, key, "")


def _last_result_event(text: str) -> Mapping[str, Any]:
    """A whole JSON object, or the last `{"type": "result"}` line of a stream-json transcript."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                raise ClaudeResultError("input is neither a JSON object nor stream-json lines") from None
            if isinstance(event, dict) and event.get("type") == "result":
                doc = event
        if doc is None:
            raise ClaudeResultError("stream-json input has no result event") from None
    if isinstance(doc, list):  # `--output-format json --verbose` prints the whole event list
        results = [e for e in doc if isinstance(e, dict) and e.get("type") == "result"]
        if not results:
            raise ClaudeResultError("event list has no result event")
        doc = results[-1]
    if not isinstance(doc, dict):
        raise ClaudeResultError("result must be a JSON object")
    return doc


def parse_claude_result(result: Mapping[str, Any] | str) -> ClaudeRun:
    """The columns of an agent run from one CLI result; raises ClaudeResultError on bad input."""
    doc = _last_result_event(result) if isinstance(result, str) else result
    if doc.get("type", "result") != "result":
        raise ClaudeResultError("type must be 'result'")
    usage = doc.get("usage") or {}
    if not isinstance(usage, Mapping):
        raise ClaudeResultError("usage must be an object")
    model_usage = doc.get("modelUsage") or {}
    if not isinstance(model_usage, Mapping):
        raise ClaudeResultError("modelUsage must be an object")
    try:
        check_json(doc)  # what is stored as raw JSON: bounded depth, finite numbers
    except ValueError as e:
        raise ClaudeResultError(str(e)) from None
    cost = doc.get("total_cost_usd", doc.get("cost_usd", 0.0)) or 0.0
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < math.inf:
        raise ClaudeResultError("total_cost_usd must be a finite number of at least 0")
    # The model with the largest cost is the one the run is filed under.
    model = max(model_usage, key=lambda m: _model_cost(model_usage[m]), default=None)
    if model is not None and (len(model) > 200 or "\x00" in model):
        raise ClaudeResultError("modelUsage names a model longer than 200 characters")
    uuid, session_id = _text(doc, "uuid", 200), _text(doc, "session_id", 180)
    canonical = json.dumps(doc, sort_keys=True, default=str).encode()
    run_key = uuid or session_id or hashlib.sha256(canonical).hexdigest()[:32]
    if uuid is None and session_id:
        # A resumed session prints the same session_id again; keep both runs.
        run_key = f"{session_id}:{hashlib.sha256(canonical).hexdigest()[:16]}"
    subtype = doc.get("subtype")
    if subtype is not None and (not isinstance(subtype, str) or len(subtype) > 100 or "\x00" in subtype):
        raise ClaudeResultError("subtype must be text of at most 100 characters")
    return {
        "run_key": run_key,
        "session_id": session_id,
        "model": model,
        "subtype": subtype,
        "is_error": bool(doc.get("is_error", False))
        or (isinstance(subtype, str) and subtype.startswith("error")),
        "num_turns": _opt_int(doc, "num_turns"),
        "duration_ms": _opt_int(doc, "duration_ms"),
        "duration_api_ms": _opt_int(doc, "duration_api_ms"),
        "cost_usd": float(cost),
        "input_tokens": _int(usage, "input_tokens"),
        "output_tokens": _int(usage, "output_tokens"),
        "cache_read_tokens": _int(usage, "cache_read_input_tokens"),
        "cache_creation_tokens": _int(usage, "cache_creation_input_tokens"),
        "model_usage": dict(model_usage),
        "raw": dict(doc),
    }
