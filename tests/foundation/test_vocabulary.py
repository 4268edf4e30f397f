"""The words octel reads in cycle states are declared once and documented as they are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from telemetry import vocabulary as v

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_lists_every_word() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Cycle vocabulary", 1)[1].split("\n## ", 1)[0]
    for word in (*v.TIMEOUT_WORDS, *v.ABORT_WORDS, *v.FAILURE_WORDS, *v.FAILED_TERMINAL_STATES):
        assert f"`{word}`" in section, word


def test_the_alert_and_the_dashboard_count_the_same_failed_states() -> None:
    wanted = "|".join(v.FAILED_TERMINAL_STATES)
    rules = (ROOT / "dashboards" / "prometheus" / "octel-alerts.yml").read_text(encoding="utf-8")
    board = (ROOT / "dashboards" / "build_dashboard.py").read_text(encoding="utf-8")
    for text in (rules, board):
        found = set(re.findall(r'terminal_state=~\\?"([^"\\]+)\\?"', text))
        assert found == {wanted}, found


def test_every_failed_state_is_a_failure_to_why_and_prune() -> None:
    assert all(v.failed(s) for s in v.FAILED_TERMINAL_STATES)


@pytest.mark.parametrize(
    ("text", "timeout", "abort", "failure"),
    [
        ("worker_timeout", True, False, True),
        ("Timed-Out", True, False, True),
        ("wall clock exceeded", True, False, True),
        ("cancelled", False, True, True),
        ("crashed", False, False, True),
        ("done", False, False, False),
        ("merged", False, False, False),
        ("no_candidates", False, False, False),
    ],
)
def test_words_by_part(text: str, timeout: bool, abort: bool, failure: bool) -> None:
    assert (v.timed_out(text), v.aborted(text), v.failed(text)) == (timeout, abort, failure)
