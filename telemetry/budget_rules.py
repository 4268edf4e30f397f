"""The budgets and quota windows of one octel instance: the `OCTEL_BUDGET_*` limits and the
rules file `OCTEL_BUDGETS_FILE` (TOML or JSON), read once at start.

The file holds ``budgets`` (each ``{scope, match, limit_usd | limit_tokens, warn_at, action}``)
and ``quotas`` (each ``{provider, key_label, window, hours, reset_day, limit_tokens |
limit_usd, drivers, warn_at}``); in TOML ``[[budgets]]`` and ``[[quotas]]`` tables, in JSON an
object with those lists, or a bare list of budgets. A bad entry is a ValueError naming the file,
the entry and the field.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from telemetry.settings import Settings
from tower.budgets import UNITS, Budget, Scope, budget_from_mapping
from tower.quotas import Quota, quota_from_mapping

__all__ = ["budgets_of", "quotas_of", "read_rules"]

_SETTINGS: tuple[tuple[Scope, str], ...] = (
    ("tree", "budget_tree"),
    ("driver_day", "budget_driver_day"),
    ("label", "budget_label"),
    ("fleet_day", "budget_fleet_day"),
)


def read_rules(path: Path) -> tuple[list[Budget], list[Quota]]:
    """The budgets and quotas of one rules file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"OCTEL_BUDGETS_FILE {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        doc: Any = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"OCTEL_BUDGETS_FILE {path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}"
        ) from None
    if isinstance(doc, list):
        doc = {"budgets": doc}
    if not isinstance(doc, dict):
        raise ValueError(f"OCTEL_BUDGETS_FILE {path}: expected budgets and quotas lists")
    unknown = sorted(set(doc) - {"budgets", "quotas"})
    if unknown:
        raise ValueError(f"OCTEL_BUDGETS_FILE {path}: unknown section {unknown[0]!r} (budgets, quotas)")
    budgets: list[Budget] = []
    quotas: list[Quota] = []
    for name in ("budgets", "quotas"):
        items = doc.get(name, [])
        if not isinstance(items, list):
            raise ValueError(f"OCTEL_BUDGETS_FILE {path}: {name} must be a list")
        for i, raw in enumerate(items):
            where = f"OCTEL_BUDGETS_FILE {path}: {name}[{i}]"
            if not isinstance(raw, dict):
                raise ValueError(f"{where}: expected a table of fields")
            if name == "budgets":
                budgets.append(budget_from_mapping(raw, where))
            else:
                quotas.append(quota_from_mapping(raw, where))
    return budgets, quotas


def budgets_of(settings: Settings) -> tuple[Budget, ...]:
    """The limits of the settings, then the file's."""
    out: list[Budget] = []
    for scope, stem in _SETTINGS:
        for unit in UNITS:
            limit = getattr(settings, f"{stem}_{unit}")
            if limit is not None:
                warn, act = settings.budget_warn_at, settings.budget_action
                out.append(Budget(scope, float(limit), unit, "*", warn, act))
    if settings.budgets_file is not None:
        out += read_rules(settings.budgets_file)[0]
    return tuple(out)


def quotas_of(settings: Settings) -> tuple[Quota, ...]:
    """The quota windows of the rules file (none without one)."""
    return tuple(read_rules(settings.budgets_file)[1]) if settings.budgets_file is not None else ()
