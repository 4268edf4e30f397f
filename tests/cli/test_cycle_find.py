"""A cycle found by its id, and named by its session's title: the query, `GET /api/cycles?cycle=`
and `octel cycles list --cycle` agree; the title is the stored (redacted) one, the archive's
before the live row's, whole in the answer and cut with "…" by a narrow table only."""

from __future__ import annotations

import importlib
import io
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from octelrun import Octel
from rich.console import Console
from storeseed import T0, add, cycle, session

from telemetry.queries.cycles import CycleFilter, list_cycles, session_titles
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from web.app import create_app

PLACE = "[REDACTED:github_token:0123456789ab]"
LONG = "Refactor the scheduler so that every queue drains " + PLACE + " before the next window opens up again"


def _live(session_id: str, title: str, state: str) -> LiveSession:
    at = {"state_since": T0, "first_seen_at": T0, "updated_at": T0}
    return LiveSession(server="http://127.0.0.1:4096", session_id=session_id, title=title, state=state, **at)


def _seed(octel: Octel) -> None:
    add(
        octel.engine,
        session("ses_archived", title="Fix the flaky test"),
        session("ses_long", title=LONG),
        session("ses_untitled", title=None),
        _live("ses_live", "Still running now", "busy"),
        _live("ses_archived", "old live title", "idle"),  # archived, still live: the archive's wins
        *(
            cycle(f"impl-{i}", "impl", started_at=T0 - timedelta(minutes=i), session_id=sid)
            for i, sid in enumerate(
                ["ses_archived", "ses_long", "ses_untitled", "ses_live", "ses_unknown", None]
            )
        ),
        cycle("review-1", "review", started_at=T0 - timedelta(days=400)),
    )


@pytest.fixture
def seeded(octel: Octel) -> Octel:
    _seed(octel)
    return octel


@pytest.fixture
def api(seeded: Octel) -> Iterator[TestClient]:
    settings = Settings(data_dir=seeded.data_dir, database_url=seeded.url, _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as c:
        yield c


def test_titles_are_the_archive_s_then_the_live_row_s(seeded: Octel) -> None:
    with session_scope(seeded.engine, write=False) as db:
        got = session_titles(db, {"ses_archived", "ses_long", "ses_untitled", "ses_live", "ses_unknown"})
        page = list_cycles(db, CycleFilter(limit=10), T0)
    assert got["ses_archived"] == "Fix the flaky test"
    assert got["ses_live"] == "Still running now"
    assert "ses_untitled" not in got and "ses_unknown" not in got
    assert got["ses_long"] == LONG  # whole: the table that shows it cuts it to its width
    by_id = {c.cycle_id: c.session_title for c in page.items}
    assert by_id["impl-0"] == "Fix the flaky test" and by_id["impl-3"] == "Still running now"
    assert by_id["impl-2"] is None and by_id["impl-4"] is None and by_id["impl-5"] is None


def test_a_cycle_is_found_by_its_exact_id(seeded: Octel) -> None:
    with session_scope(seeded.engine, write=False) as db:
        one = list_cycles(db, CycleFilter(cycle_id="impl-1"), T0).items
        none = list_cycles(db, CycleFilter(cycle_id="impl-"), T0).items
        other = list_cycles(db, CycleFilter(cycle_id="impl-1", driver="review"), T0).items
    assert [c.cycle_id for c in one] == ["impl-1"] and one[0].session_title == LONG
    assert none == [] and other == []  # exact, and the other filters still apply


def test_the_api_finds_a_cycle_by_id_and_names_its_session(api: TestClient) -> None:
    r = api.get("/api/cycles", params={"cycle": "impl-0"})
    assert r.status_code == 200, r.text
    [c] = r.json()["items"]
    assert (c["cycle_id"], c["session_id"], c["session_title"]) == (
        "impl-0",
        "ses_archived",
        "Fix the flaky test",
    )
    # an old cycle is found when no window is asked for, and not outside one
    assert [c["cycle_id"] for c in api.get("/api/cycles?cycle=review-1").json()["items"]] == ["review-1"]
    assert api.get("/api/cycles?cycle=review-1&since=90d").json()["items"] == []
    assert api.get("/api/cycles?cycle=nope").json() == {"items": [], "next_cursor": None}
    every = api.get("/api/cycles", params={"limit": 500}).json()["items"]
    assert len(every) == 7 and all("session_title" in c for c in every)


def test_the_cli_finds_a_cycle_by_id_with_json_and_in_a_table(seeded: Octel) -> None:
    [c] = seeded.json("cycles", "list", "--cycle", "impl-3")["items"]
    assert (c["cycle_id"], c["session_title"]) == ("impl-3", "Still running now")
    assert seeded.json("cycles", "list", "--cycle", "missing") == {"items": [], "next_cursor": None}
    out = seeded("cycles", "list", "--cycle", "impl-0")
    assert out.exit_code == 0, out.output
    assert "impl-0" in out.stdout and "ses_archived Fix the flaky test" in out.stdout
    assert "impl-1" not in out.stdout


@pytest.mark.parametrize("width", [100, 160])
def test_a_narrow_terminal_cuts_the_title_and_keeps_the_session_id(
    seeded: Octel, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    out = io.StringIO()
    term = Console(file=out, width=width, force_terminal=True, color_system=None)
    for name in ("cli.app", "cli.fleet"):
        monkeypatch.setattr(importlib.import_module(name), "console", term, raising=False)
    r = seeded("cycles", "list", "--cycle", "impl-1")
    assert r.exit_code == 0, r.output
    text = out.getvalue()
    [row] = [ln for ln in text.splitlines() if "impl-1" in ln]  # one line, never wrapped
    assert all(len(ln) <= width for ln in text.splitlines()), text
    if width >= 160 or "session" in text:  # kept while it fits: the id whole, the title cut
        assert "ses_long Refactor" in row and "…" in row and LONG not in row, text
    monkeypatch.undo()
    piped = seeded("cycles", "list", "--cycle", "impl-1").stdout
    assert LONG in piped and PLACE in piped  # piped: the title whole, its placeholder whole
