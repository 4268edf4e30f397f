"""Prices for OpenCode turns whose server recorded no cost (pure).

OpenCode records each answer's cost from its provider configuration; a custom provider, a model
models.dev does not list, or a local gateway leaves it at 0 while the tokens are there. Such a
turn (cost 0 or absent, tokens above 0, a model and a provider named) is priced the way Claude
Code sessions are (``archiver.claude.prices``): the user price file first, else genai-prices
under the turn's provider. A cost the server recorded is never replaced. Each turn says what
priced it (``cost_source``), and a session octel priced any turn of gets a ``cost_check`` naming
the price source, its version and the models nobody could price.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from archiver.claude.prices import Usage, price_source, priced
from archiver.metrics import rollup
from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = [
    "OCTEL_PRICED",
    "message_cost",
    "opencode_cost_check",
    "price_turns",
    "provider_of",
    "reprice_documents",
]

# What priced a turn: octel's own sources (the others are "server" and "none")
OCTEL_PRICED = ("genai-prices", "price-file", "unpriced")

# OpenCode's provider ids (models.dev's) where genai-prices names the same provider otherwise
_ALIASES = {
    "amazon-bedrock": "aws",
    "xai": "x-ai",
    "google-vertex": "google",
    "togetherai": "together",
    "fireworks-ai": "fireworks",
    "github-models": "github-copilot",
}


def provider_of(provider: str) -> str:
    """genai-prices' id of an OpenCode provider id."""
    low = provider.strip().lower()
    return _ALIASES.get(low, low)


def _usage(tok: Mapping[str, Any]) -> Usage:
    def n(k: str) -> int:
        v = tok.get(k)
        return max(int(v), 0) if isinstance(v, int | float) and not isinstance(v, bool) else 0

    # reasoning tokens are billed as output; OpenCode does not split 5-minute and 1-hour writes
    return Usage(
        input=n("input"),
        output=n("output") + n("reasoning"),
        cache_read=n("cache_read"),
        cache_write_5m=n("cache_write"),
    )


def price_turns(turns: Iterable[JsonObj]) -> set[str]:
    """Set each turn's ``cost_source`` and, where the server recorded no cost, octel's price;
    the names (``provider/model``) of the models nobody could price."""
    unpriced: set[str] = set()
    for t in turns:
        usage = _usage(as_obj(t.get("tokens")))
        model, provider = t.get("model"), t.get("provider")
        if t.get("cost"):
            t["cost_source"] = "server"
        elif not usage.total:
            t["cost_source"] = "none"
        elif not isinstance(model, str) or not model or not isinstance(provider, str) or not provider:
            t["cost_source"] = "server"  # nothing to price it by: as the server recorded it
        else:
            names = (f"{provider}/{model}", model)
            cost, source = priced(names, usage, provider_of(provider), t.get("created"))
            t["cost"], t["cost_source"] = float(cost or 0.0), source
            if cost is None:
                unpriced.add(names[0])
    return unpriced


def message_cost(info: Mapping[str, Any]) -> float:
    """One OpenCode assistant message's cost as the archive will count it: the server's, else
    octel's price (0 when nobody knows the model); for the live board's cost so far."""
    cost = info.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost == cost and cost:
        return float(cost)
    tok, created = as_obj(info.get("tokens")), as_obj(info.get("time")).get("created")
    cache = as_obj(tok.get("cache"))
    turn: JsonObj = {
        "tokens": {"cache_read": cache.get("read"), "cache_write": cache.get("write")}
        | {k: tok.get(k) for k in ("input", "output", "reasoning")},
        "cost": 0.0,
        "model": info.get("modelID"),
        "provider": info.get("providerID"),
        "created": created if isinstance(created, int | float) else None,
    }
    price_turns([turn])
    return float(turn["cost"])


def opencode_cost_check(turns: Iterable[Mapping[str, Any]], unpriced: Iterable[str]) -> JsonObj | None:
    """A session's ``cost_check`` when octel priced (or could not price) any of its turns: its
    cost by model, what the server recorded, the price source; None when the server priced all."""
    models: dict[str, JsonObj] = {}
    computed = server = 0.0
    ours = False
    for t in turns:
        tok = as_obj(t.get("tokens"))
        name = f"{t.get('provider')}/{t.get('model')}"
        row = models.setdefault(name, dict.fromkeys(("input", "output", "cache_read", "cache_write"), 0))
        row.setdefault("cost", 0.0)
        for k in ("input", "output", "cache_read", "cache_write"):
            row[k] += int(tok.get(k) or 0)
        cost = float(t.get("cost") or 0.0)
        row["cost"] += cost
        computed += cost
        if t.get("cost_source") in OCTEL_PRICED:
            ours = True
        else:
            server += cost
    if not ours:
        return None
    return {
        "computed_usd": computed,
        # no CLI reports a total to check against: what the server recorded is kept beside
        "reported_usd": None,
        "reported_from": None,
        "difference_usd": None,
        "comparable": False,
        "mismatch": False,
        "unpriced_models": sorted(set(unpriced)),
        "models": models,
        "reported_models": {},
        "server_usd": server,
        "prices": price_source(),
    }


def _ours(t: Mapping[str, Any]) -> bool:
    """Priced by octel (or, archived before octel priced OpenCode turns, left at 0)."""
    source = t.get("cost_source")
    return source in OCTEL_PRICED or (source is None and not t.get("cost"))


def reprice_documents(docs: Iterable[JsonObj]) -> list[JsonObj]:
    """Price again, at the prices in use now, the turns of one tree's OpenCode documents that
    octel priced (the server's costs stay); own totals, subtree costs and each ``cost_check``
    follow. The documents changed, in place; the others are left as they were."""
    docs = [
        d
        for d in docs
        if as_obj(d.get("source")).get("kind", "opencode") == "opencode"
        and int(d.get("schema_version") or 0) >= 3
    ]
    before = {str(d["session_id"]): orjson.dumps(d) for d in docs}
    for doc in docs:
        turns = [t for t in doc.get("per_turn") or [] if isinstance(t, dict)]
        for t in turns:
            if _ours(t):
                t["cost"] = 0.0
                t.pop("cost_source", None)
        unpriced = price_turns(turns)
        doc["totals"]["cost"] = sum(float(t.get("cost") or 0.0) for t in turns)
        doc["cost_check"] = opencode_cost_check(turns, unpriced)
    own = {str(d["session_id"]): d["totals"] for d in docs}
    subs = rollup(own, {str(d["session_id"]): d.get("parent_session_id") for d in docs})
    for doc in docs:
        doc["subtree"]["cost"] = subs[str(doc["session_id"])]["cost"]
    return [d for d in docs if orjson.dumps(d) != before[str(d["session_id"])]]
