"""Tables fit the terminal: one line per row at 80, 100 and 160 columns, the decisive columns
always there, the title cut with "…"; piped, every column whole."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from octelrun import Octel
from rich.console import Console
from storeseed import add, session

import cli.live
from cli.fit import Col, fit_widths

sys.path.insert(0, str(Path(__file__).parent.parent))  # live_seed
from live_seed import store_waiting_tree

TITLE = "Fix the flaky retry test in the ingest path and explain why it failed on CI " * 2
ID = "ses_1f3a9c0d2e4b6a8c0d2e4f6a8b"


def _terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> io.StringIO:
    out = io.StringIO()
    term = Console(file=out, width=width, force_terminal=True, color_system=None)
    # `cli.app` the name is the Typer app (the package exports it): patch the module
    monkeypatch.setattr(sys.modules["cli.app"], "console", term, raising=False)
    monkeypatch.setattr(cli.live, "console", term)
    return out


def _rows(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


@pytest.mark.parametrize("width", [80, 100, 160])
def test_session_list_fits_the_terminal(octel: Octel, monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    add(octel.engine, session(ID, title=TITLE.strip(), label="nightly", agent="build", cost_usd=5.02))
    out = _terminal(monkeypatch, width)
    assert octel("sessions", "list").exit_code == 0
    text = out.getvalue()
    assert all(len(line) <= width for line in text.splitlines())
    [row] = _rows(text, ID)  # the id whole, the row on one line
    assert "$5.02" in row and "healthy" in row
    assert "…" in row and "Fix the flaky" in row  # the title cut, not wrapped
    header = next(line for line in text.splitlines() if "session" in line and "cost" in line)
    assert "verdict" in header and "title" in header


def test_narrow_drops_secondary_columns_first(octel: Octel, monkeypatch: pytest.MonkeyPatch) -> None:
    add(octel.engine, session(ID, title="short", label="nightly", agent="build", cost_usd=5.02))
    out = _terminal(monkeypatch, 80)
    assert octel("sessions", "list").exit_code == 0
    header = next(line for line in out.getvalue().splitlines() if "session" in line and "cost" in line)
    assert "source" not in header and "label" not in header  # the least useful went first
    assert "$5.02" in _rows(out.getvalue(), ID)[0]


@pytest.mark.parametrize("width", [80, 100, 160])
def test_live_list_has_titles_and_fits(octel: Octel, monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    _child, ids = store_waiting_tree(octel.engine)
    out = _terminal(monkeypatch, width)
    assert octel("sessions", "list", "--live").exit_code == 0
    text = out.getvalue()
    assert all(len(line) <= width for line in text.splitlines())
    header = next(line for line in text.splitlines() if "session" in line and "state" in line)
    assert "title" in header
    for sid in ids:
        [row] = _rows(text, sid)
        assert any(s in row for s in ("waiting_permission", "idle", "busy", "running_tool", "unknown"))


def test_piped_rows_are_whole_and_one_per_line(octel: Octel) -> None:
    add(octel.engine, session(ID, title=TITLE.strip(), label="nightly"))
    r = octel("sessions", "list")
    [row] = _rows(r.stdout, ID)
    assert TITLE.strip() in row and "nightly" in row and "…" not in row


@given(
    st.lists(st.tuples(st.integers(0, 9), st.booleans(), st.integers(1, 60)), min_size=1, max_size=14),
    st.integers(40, 240),
)
def test_kept_columns_fit_and_decisive_stay(spec: list[tuple[int, bool, int]], width: int) -> None:
    cols = [Col(f"c{i}", rank=r, flex=f) for i, (r, f, _) in enumerate(spec)]
    natural = [n for *_, n in spec]
    got = fit_widths(cols, natural, width)
    assert all(got[i] is not None for i, c in enumerate(cols) if c.rank == 0)
    kept = [i for i, w in enumerate(got) if w is not None]
    decisive = 1 + sum(
        3 + (min(natural[i], 20) if cols[i].flex else natural[i]) for i in kept if not cols[i].rank
    )
    if decisive <= width:
        assert 1 + sum(3 + (got[i] or 0) for i in kept) <= width
