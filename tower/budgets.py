"""Spend budgets: which limits the spend so far crosses, and which live sessions a breach stops
(pure: no I/O, no clock).

A `Budget` limits one scope, in US dollars or tokens: a session tree (`tree`, its root id),
a driver's UTC day (`driver_day`), a label (`label`, all time) or the whole fleet's UTC day
(`fleet_day`). ``match`` picks the subjects it covers (a shell pattern: ``*`` is every tree,
driver or label; each subject is held to the limit on its own). `crossings` takes the spend so
far per (scope, subject) and returns each warning (at ``warn_at`` of the limit) and each breach
once, by key; `budget_intents` turns the breaches that hold now into the watcher's intents
(`tower.actions.Intent`, rule ``budget``), one abort per session run, so a tree that starts in
a driver's day already over its budget is stopped too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal, TypedDict, get_args

from tower.actions import QUIET, Intent, SessionView, run_key

__all__ = [
    "ACTIONS",
    "SCOPES",
    "UNITS",
    "Budget",
    "Crossing",
    "Used",
    "budget_from_mapping",
    "budget_intents",
    "crossings",
]

Scope = Literal["tree", "driver_day", "label", "fleet_day"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
Unit = Literal["usd", "tokens"]
UNITS: tuple[Unit, ...] = get_args(Unit)
Action = Literal["abort", "notify"]
ACTIONS: tuple[Action, ...] = get_args(Action)
Level = Literal["warning", "breach"]
_DAILY = ("driver_day", "fleet_day")


class BudgetEvidence(TypedDict):
    """What an intent raised by a budget says about it (the audit row's evidence)."""

    budget: str
    scope: Scope
    match: str
    subject: str
    unit: Unit
    used: float
    limit: float


@dataclass(frozen=True)
class Budget:
    scope: Scope
    limit: float
    unit: Unit = "usd"
    match: str = "*"
    warn_at: float = 0.8  # share of the limit at which a warning is raised (1: none)
    action: Action = "abort"

    @property
    def name(self) -> str:
        """How a person and the audit row name it: ``tree * $5.00``, ``driver_day nightly 2M tokens``."""
        cents = round(self.limit, 2) == self.limit
        usd = f"${self.limit:,.2f}" if cents else f"${self.limit:g}"
        amount = usd if self.unit == "usd" else f"{self.limit:,.0f} tokens"
        return f"{self.scope} {self.match if self.scope != 'fleet_day' else 'fleet'} {amount}"


@dataclass(frozen=True)
class Used:
    usd: float = 0.0
    tokens: int = 0

    def of(self, unit: Unit) -> float:
        return self.usd if unit == "usd" else float(self.tokens)


@dataclass(frozen=True)
class Crossing:
    budget: Budget
    subject: str  # the tree's root id, the driver, the label; "" for the fleet
    level: Level
    used: float  # in the budget's unit
    key: str  # once per key

    @property
    def share(self) -> float:
        return self.used / self.budget.limit


def _key(b: Budget, subject: str, day: str, level: Level) -> str:
    when = f":{day}" if b.scope in _DAILY else ""
    return f"budget:{b.scope}:{b.match}:{b.limit:g}{b.unit}:{subject}{when}:{level}"


def _covers(b: Budget, scope: str, subject: str) -> bool:
    return scope == b.scope and (b.scope == "fleet_day" or fnmatchcase(subject, b.match))


def crossings(
    spent: Mapping[tuple[Scope, str], Used],
    budgets: Sequence[Budget],
    day: str,
    done: Collection[str] = (),
) -> list[Crossing]:
    """The warnings and breaches due now, each at most once (keys in ``done`` were raised
    already). A spend that jumps past the limit at once is a breach alone: no warning after it."""
    out: list[Crossing] = []
    for b in budgets:
        for (scope, subject), use in sorted(spent.items()):
            if not _covers(b, scope, subject):
                continue
            used = use.of(b.unit)
            if used >= b.limit:
                level: Level = "breach"
            elif b.warn_at < 1 and used >= b.warn_at * b.limit:
                level = "warning"
            else:
                continue
            key = _key(b, subject, day, level)
            if key not in done and all(c.key != key for c in out):
                out.append(Crossing(b, subject, level, used, key))
    return out


def budget_intents(
    views: Iterable[SessionView],
    spent: Mapping[tuple[Scope, str], Used],
    budgets: Sequence[Budget],
    subjects: Callable[[SessionView], Mapping[Scope, str]],
    done: Collection[str] = (),
) -> list[Intent]:
    """An intent for every live session in a scope over its limit now, at most one per session
    run (an abort shares its key with the other rules' aborts). ``subjects`` names each
    session's tree, driver, label (a scope it has none of is left out)."""
    out: list[Intent] = []
    for v in views:
        if v.state in QUIET:  # an interrupted run included: the abort has been done
            continue
        names = dict(subjects(v))
        names["fleet_day"] = ""
        for b in budgets:
            subject = names.get(b.scope)
            if subject is None or not _covers(b, b.scope, subject):
                continue
            used = spent.get((b.scope, subject), Used()).of(b.unit)
            if used < b.limit:
                continue
            if b.action == "abort":
                key = f"abort:{v.session_id}:{run_key(v)}"
            else:
                key = f"notify:{v.session_id}:{run_key(v)}:budget:{b.name}"
            if key in done or any(i.key == key for i in out):
                continue
            ev: BudgetEvidence = {
                "budget": b.name,
                "scope": b.scope,
                "match": b.match,
                "subject": subject,
                "unit": b.unit,
                "used": round(used, 6),
                "limit": b.limit,
            }
            out.append(Intent("budget", b.action, v.session_id, key, ev))
    return out


def _number(raw: Mapping[str, Any], name: str, where: str) -> float | None:
    v = raw.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
        raise ValueError(f"{where}: {name} must be a number above 0, not {v!r}")
    return float(v)


def budget_from_mapping(raw: Mapping[str, Any], where: str = "budget") -> Budget:
    """One rule of a budgets file (``{scope, match, limit_usd | limit_tokens, warn_at, action}``);
    ValueError naming the field."""
    scope = raw.get("scope")
    if scope not in SCOPES:
        raise ValueError(f"{where}: scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    usd, tokens = _number(raw, "limit_usd", where), _number(raw, "limit_tokens", where)
    if (usd is None) == (tokens is None):
        raise ValueError(f"{where}: give one of limit_usd or limit_tokens")
    match = raw.get("match", "*")
    if not isinstance(match, str) or not match.strip():
        raise ValueError(f"{where}: match must be a name or a pattern, not {match!r}")
    warn = raw.get("warn_at", 0.8)
    if isinstance(warn, bool) or not isinstance(warn, int | float) or not 0 < warn <= 1:
        raise ValueError(f"{where}: warn_at must be a share above 0 and at most 1, not {warn!r}")
    action = raw.get("action", "abort")
    if action not in ACTIONS:
        raise ValueError(f"{where}: action must be abort or notify, not {action!r}")
    unknown = sorted(set(raw) - {"scope", "match", "limit_usd", "limit_tokens", "warn_at", "action"})
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    limit, unit = (usd, "usd") if usd is not None else (tokens, "tokens")
    assert limit is not None
    return Budget(scope, limit, unit, match.strip(), float(warn), action)  # type: ignore[arg-type]
