"""How a Claude Code run ended, from its ``result`` event (pure).

``is_error`` says whether it failed; ``subtype`` alone does not: the CLI ends a run that hit the
output-token limit or ran out of API retries with ``subtype: success, is_error: true``. The kind
of a failed run is its ``error_*`` subtype, else its ``terminal_reason``, else what its error text
says; never ``success``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["error_kind_of"]

# what the CLI's error texts say, first match wins
_TEXTS = (
    (re.compile(r"output token maximum|max_tokens|output.token limit", re.I), "max_output_tokens"),
    (re.compile(r"prompt is too long|context (window|length)", re.I), "prompt_too_long"),
    (re.compile(r"\bAPI Error\b", re.I), "api_error"),
    (re.compile(r"maximum number of turns", re.I), "error_max_turns"),
)
_NOT_A_KIND = frozenset({"", "success", "completed"})


def _text(result: Mapping[str, Any]) -> str:
    errors = result.get("errors")
    parts = [result.get("result"), *(errors if isinstance(errors, list) else [errors])]
    return " ".join(p for p in parts if isinstance(p, str))


def error_kind_of(result: Mapping[str, Any]) -> str | None:
    """The kind of error a run's result event reports; None when it reports none."""
    if result.get("is_error") is not True:
        return None
    subtype = result.get("subtype")
    if isinstance(subtype, str) and subtype.startswith("error"):
        return subtype
    text = _text(result)
    if text:  # the text names the limit; a terminal reason such as "completed" may not
        for pattern, kind in _TEXTS:
            if pattern.search(text):
                return kind
    reason = result.get("terminal_reason")
    if isinstance(reason, str) and reason not in _NOT_A_KIND:
        return reason
    return "error"
