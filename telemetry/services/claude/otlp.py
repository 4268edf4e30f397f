"""Claude Code's own telemetry (OTLP/HTTP, JSON or protobuf) -> one agent run per ``session.id``.

A fleet that cannot wrap the CLI still gets costs and errors: Claude Code exports
``claude_code.cost.usage`` and ``claude_code.token.usage`` (delta sums) and the events
``api_request`` (usage and cost of one API call), ``api_error`` and ``tool_result``. Each session
becomes one ``agent_run`` row (``run_key = otel:<session.id>``). Usage is tallied twice, from the
metrics and from the request events, and the row takes the larger of the two, so a fleet that
exports only one of them is counted, and one that exports both is not counted twice. Every
observation has a key (the request id, or the data point's series and time), kept as a digest in
`otlp_seen` once folded in: an exporter that retries a batch changes nothing.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TypedDict

from sqlalchemy import insert
from sqlmodel import Session, col, select

from archiver.bounds import INT64_MAX
from archiver.claude.otlp import Observation
from archiver.redact import Redactor
from archiver.shape import RawJson
from telemetry.store import aggregates
from telemetry.store.locks import lock_key
from telemetry.store.models import AgentRun, OtlpSeen

__all__ = ["apply"]

_TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
_KEEP_ERRORS = 20
_MAX_SID = 195  # a placeholder is longer than a short secret: `otel:` + id still fits 200
_CHUNK = 500  # digests asked at once: under every engine's bound-parameter limit


class Tally(TypedDict):
    """What one source (metrics or requests) told of a run: its cost, its tokens by kind, and
    both per model, kept in the run's raw JSON."""

    cost: float
    tokens: dict[str, float]
    models: dict[str, dict[str, float]]


def _tally(raw: RawJson, name: str) -> Tally:
    got: Tally = raw.setdefault(name, {"cost": 0.0, "tokens": {k: 0.0 for k in _TOKEN_KINDS}, "models": {}})
    return got


def _observe(raw: RawJson, o: Observation) -> None:
    events = raw.setdefault("events", {})
    events[o.kind] = events.get(o.kind, 0) + 1
    source = _tally(raw, "metrics" if o.kind.startswith("metric") else "requests")
    model = source["models"].setdefault(o.model or "unknown", {"cost": 0.0, **{k: 0.0 for k in _TOKEN_KINDS}})
    if o.kind in ("metric_cost", "api_request"):
        source["cost"] += o.value
        model["cost"] += o.value
    for k, v in o.tokens.items():
        source["tokens"][k] += v
        model[k] += v
    if o.kind == "api_error":
        raw["errors"] = [*raw.get("errors", []), o.detail][-_KEEP_ERRORS:]
    if o.kind in ("api_request", "api_error"):
        raw["last_api"] = o.kind
    if o.kind == "tool_result" and o.failed:  # kept for the run's story, not a cost
        raw["tool_failures"] = raw.get("tool_failures", 0) + 1


def _model_usage(v: Mapping[str, float]) -> dict[str, float]:
    """One model's tally in the CLI's own ``modelUsage`` shape."""
    return {
        "costUSD": v["cost"],
        "inputTokens": v["input"],
        "outputTokens": v["output"],
        "cacheReadInputTokens": v["cache_read"],
        "cacheCreationInputTokens": v["cache_write"],
    }


def _redacted(found: list[Observation], redactor: Redactor) -> list[Observation]:
    """The observations with every text octel keeps (session id, model, key, detail) redacted:
    the placeholder is a keyed hash, so a retried export still finds its run and its keys."""
    texts = [[o.session_id, o.model, o.key, o.detail] for o in found]
    clean, _ = redactor.redact_obj(texts)
    return [
        replace(o, session_id=t[0][:_MAX_SID], model=t[1] and t[1][:_MAX_SID], key=t[2], detail=t[3])
        for o, t in zip(found, clean, strict=True)
    ]


def digest(key: str) -> str:
    """An observation key's digest in `otlp_seen` (128 bits: no two keys of a run share one)."""
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def _unseen(db: Session, run_key: str, found: list[Observation]) -> list[Observation]:
    """The run's observations not folded in before, nor twice in this batch, in their order;
    they are marked seen. The caller holds the run's lock, so no other writer marks them too."""
    fresh: dict[str, Observation] = {}
    for o in found:
        fresh.setdefault(digest(o.key), o)
    wanted = list(fresh)
    for i in range(0, len(wanted), _CHUNK):
        known = select(OtlpSeen.digest).where(
            OtlpSeen.run_key == run_key, col(OtlpSeen.digest).in_(wanted[i : i + _CHUNK])
        )
        for d in db.exec(known):
            del fresh[d]
    if fresh:
        db.execute(insert(OtlpSeen), [{"run_key": run_key, "digest": d} for d in fresh])
    return list(fresh.values())


def apply(db: Session, found: list[Observation], now: datetime, redactor: Redactor) -> int:
    """Fold the observations into their sessions' runs; returns how many were new."""
    new = 0
    found = _redacted(found, redactor)
    for sid in sorted({o.session_id for o in found}):
        key = f"otel:{sid}"
        lock_key(db, "agent_run", key)
        row = db.exec(select(AgentRun).where(AgentRun.run_key == key)).first()
        created = row is None
        if row is None:
            row = AgentRun(
                run_key=key, agent="claude-code", session_id=sid, subtype="otel", created_at=now, raw={}
            )
        raw = copy.deepcopy(row.raw or {})  # tallies change in place: the loaded value must not
        before_cost = row.cost_usd
        before_tokens = {
            "input": row.input_tokens,
            "output": row.output_tokens,
            "cache_read": row.cache_read_tokens,
            "cache_write": row.cache_creation_tokens,
        }
        for o in _unseen(db, key, [o for o in found if o.session_id == sid]):
            _observe(raw, o)
            new += 1
        m, r = _tally(raw, "metrics"), _tally(raw, "requests")
        row.cost_usd = max(m["cost"], r["cost"])
        tokens = {k: min(int(max(m["tokens"][k], r["tokens"][k])), INT64_MAX) for k in before_tokens}
        row.input_tokens, row.output_tokens = tokens["input"], tokens["output"]
        row.cache_read_tokens, row.cache_creation_tokens = tokens["cache_read"], tokens["cache_write"]
        models = r["models"] if r["cost"] >= m["cost"] else m["models"]
        row.model = max(models, key=lambda k: models[k]["cost"], default=None)
        row.num_turns = int(raw.get("events", {}).get("api_request", 0))
        row.is_error = raw.get("last_api") == "api_error"
        row.model_usage = {k: _model_usage(v) for k, v in models.items()}
        row.raw, _ = redactor.redact_obj(raw)
        db.add(row)
        labels = {"agent": "claude-code", "model": row.model or ""}
        if created:  # a session's telemetry counts as one run, once, with the outcome known then
            outcome = "error" if row.is_error else "success"
            aggregates.bump(db, "agent_runs_total", {**labels, "outcome": outcome}, 1)
        if row.cost_usd > before_cost:
            aggregates.bump(db, "agent_run_cost_usd_total", labels, row.cost_usd - before_cost)
        for kind, v in tokens.items():
            if v > before_tokens[kind]:
                aggregates.bump(
                    db, "agent_run_tokens_total", {**labels, "kind": kind}, v - before_tokens[kind]
                )
    db.flush()
    return new
