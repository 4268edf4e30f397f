"""The fleet tables fit the terminal as the sessions list does: `octel cycles list`,
`octel cycles summary`, `octel costs` (and its --top tables) and `octel runs list` print one
line per row at 80, 100 and 160 columns, the decisive columns always there, long text cut with
"…" and secondary columns dropped first; piped, every row whole on one line."""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable

import pytest
from octelrun import Octel
from rich.console import Console
from storeseed import T0, add, cycle, run, session

from cli import app

assert app.registered_commands  # every command module loaded, in the order the app loads them

CYCLE = "implementer-cycle-2026-11-01T12:00:00-0042"
SID = "ses_1f3a9c0d2e4b6a8c0d2e4f6a8b"
MODEL = "anthropic/claude-sonnet-4-5-20250929-with-a-long-gateway-suffix"
TITLE = "Fix the flaky retry test in the ingest path and explain why it failed on CI, twice over"
TASK = "Review the pull request that moves the ingest path to group commit and list each regression"


def _seed(o: Octel) -> None:
    add(
        o.engine,
        session(SID, title=TITLE, agent="build", model=MODEL, cost_usd=5.02, subtree_cost_usd=5.02),
        cycle(
            CYCLE,
            "implementer",
            ended_at=T0,
            terminal_state="completed",
            worker_outcome="worker_exited_without_a_result",
            error_kind="provider_overloaded_after_many_retries",
            claims_count=3,
            session_id=SID,
        ),
        run("run-1", task=TASK, agent="reviewer", model=MODEL, subtype="success", exit_code=0, cost_usd=1.25),
    )


def _terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> io.StringIO:
    out = io.StringIO()
    term = Console(file=out, width=width, force_terminal=True, color_system=None)
    for name in ("cli.app", "cli.queries", "cli.fleet", "cli.runs"):
        monkeypatch.setattr(importlib.import_module(name), "console", term, raising=False)
    return out


def _row(text: str, needle: str) -> str:
    [row] = [line for line in text.splitlines() if needle in line]  # one line, never wrapped
    return row


# command, the text that names the row, what must be on that same line
CASES: list[tuple[tuple[str, ...], str, Callable[[str], bool]]] = [
    (("cycles", "list", "--since", "3000d"), CYCLE, lambda r: "completed" in r and "s" in r),
    (("cycles", "summary", "--since", "3000d"), "implementer", lambda r: "all" in r and "1" in r),
    (("costs", "--by", "agent,model", "--since", "all"), "build", lambda r: "$5.02" in r),
    (("costs", "--since", "all", "--top", "3"), SID, lambda r: "$5.02" in r),
    (("runs", "list", "--since", "3000d"), "success", lambda r: "$1.25" in r and "Review the" in r),
]


@pytest.mark.parametrize("width", [80, 100, 160])
@pytest.mark.parametrize(
    ("args", "needle", "same_line"), CASES, ids=lambda v: v[0] if isinstance(v, tuple) else None
)
def test_fleet_tables_fit_the_terminal(
    octel: Octel,
    monkeypatch: pytest.MonkeyPatch,
    width: int,
    args: tuple[str, ...],
    needle: str,
    same_line: Callable[[str], bool],
) -> None:
    _seed(octel)
    out = _terminal(monkeypatch, width)
    r = octel(*args)
    assert r.exit_code == 0, r.output
    text = out.getvalue()
    assert text.strip(), "nothing printed"
    assert all(len(line) <= width for line in text.splitlines()), text
    rows = [line for line in text.splitlines() if needle in line]  # --top: a session and its tree
    assert rows and all(same_line(r) for r in rows), text  # what the row says is on its one line


@pytest.mark.parametrize("width", [80, 100])
def test_narrow_cuts_with_an_ellipsis_and_drops_secondary_first(
    octel: Octel, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    _seed(octel)
    out = _terminal(monkeypatch, width)
    assert octel("runs", "list", "--since", "3000d").exit_code == 0
    text = out.getvalue()
    row = _row(text, "success")
    assert "…" in row and TASK not in row  # the task cut, not wrapped
    header = next(line for line in text.splitlines() if "task" in line and "cost" in line)
    assert "tokens" not in header and "subtype" in header  # a secondary column went first
    out = _terminal(monkeypatch, width)
    assert octel("cycles", "list", "--since", "3000d").exit_code == 0
    header = next(line for line in out.getvalue().splitlines() if "cycle" in line and "state" in line)
    assert "claims" not in header and "duration" in header
    assert CYCLE in out.getvalue()  # the id is whole


def test_piped_rows_are_whole_and_one_per_line(octel: Octel) -> None:
    _seed(octel)
    r = octel("cycles", "list", "--since", "3000d")
    row = _row(r.stdout, CYCLE)
    assert "provider_overloaded_after_many_retries" in row and SID in row and "…" not in row
    row = _row(octel("runs", "list", "--since", "3000d").stdout, "success")
    assert TASK in row and MODEL in row
    costs = octel("costs", "--by", "agent,model", "--since", "all", "--top", "3").stdout
    by_model = costs.split("most expensive")[0].split("costs by model")[1]
    assert MODEL in _row(by_model, "opencode")  # the key whole, on its row
    assert all(TITLE in line for line in costs.splitlines() if SID in line)
    assert "…" not in costs
