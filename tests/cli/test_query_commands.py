"""`octel sessions`, `cycles` and `costs`: tables, `--json` against golden files, exit codes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from octelrun import Octel

Golden = Callable[[str, Any], None]


def test_sessions_list_table_and_json(seeded: Octel, golden: Golden) -> None:
    r = seeded("sessions", "list")
    assert r.exit_code == 0, r.output
    for text in ("ses_root", "ses_child_a", "stuck", "review", "$0.5000", "10m20s"):
        assert text in r.stdout
    page = seeded.json("sessions", "list", "--limit", "2")
    assert [s["session_id"] for s in page["items"]] == ["ses_other", "ses_root"]
    rest = seeded.json("sessions", "list", "--limit", "10", "--cursor", page["next_cursor"])
    assert [s["session_id"] for s in rest["items"]] == ["ses_child_b", "ses_child_a", "ses_grand", "ses_old"]
    golden("sessions_list", seeded.json("sessions", "list", "--agent", "general"))


def test_sessions_list_filters(seeded: Octel) -> None:
    ids = lambda *a: [s["session_id"] for s in seeded.json("sessions", "list", *a)["items"]]  # noqa: E731
    assert ids("--verdict", "stuck") == ["ses_child_a"]
    assert ids("--roots", "--model", "openai/gpt-5") == ["ses_other", "ses_old"]
    assert ids("-q", "flaky") == ["ses_root"]
    assert ids("--label", "review", "--since", "2026-11-01T14:30:00+00:00") == ["ses_root"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sessions", "list", "--since", "yesterday"), "--since"),
        (("sessions", "list", "--verdict", "bad"), "--verdict"),
        (("sessions", "list", "--cursor", "zzz"), "cursor is not valid"),
        (("sessions", "list", "--since", "1h", "--until", "2d"), "earlier"),
        (("costs", "--by", "agent,host"), "'host'"),
        (("cycles", "summary", "--since", "soon"), "--since"),
    ],
)
def test_bad_input_exits_2_with_one_sentence(seeded: Octel, args: tuple[str, ...], message: str) -> None:
    r = seeded(*args)
    assert r.exit_code == 2
    assert message in r.stderr
    assert "Traceback" not in r.output + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_sessions_show_and_tree(seeded: Octel, golden: Golden) -> None:
    r = seeded("sessions", "show", "ses_child_a")
    assert r.exit_code == 0, r.output
    assert "doom_loop" in r.stdout and "not there" in r.stdout  # findings; archive file missing
    shown = seeded.json("sessions", "show", "ses_child_a")
    assert shown["per_turn"] is None and "not there" in shown["archive"]["error"]
    assert not shown["archive"]["available"]
    golden("sessions_show", shown)
    tree = seeded("sessions", "tree", "ses_root")
    assert tree.exit_code == 0
    lines = tree.stdout.splitlines()
    assert lines[0].startswith("ses_root") and "$0.7600" in lines[0]
    assert any("ses_grand" in line for line in lines[2:])
    golden("sessions_tree", seeded.json("sessions", "tree", "ses_root"))


def test_sessions_show_reads_turns_from_the_archive(seeded: Octel) -> None:
    """Per-turn rows come from the archive file named in the index."""
    archives = seeded.data_dir / "archives"
    archives.mkdir(parents=True, exist_ok=True)
    turns = [
        {
            "model": "claude-sonnet-4",
            "tokens": {"input": 10, "output": 20},
            "cost": 0.01,
            "finish": "tool-calls",
        },
        {"model": "claude-sonnet-4", "tokens": {"input": 5, "output": 7}, "cost": 0.002, "in_flight": True},
    ]
    Path(archives / "ses_root.json").write_bytes(orjson.dumps({"schema_version": 2, "per_turn": turns}))
    got = seeded.json("sessions", "show", "ses_root")
    assert [t["finish"] for t in got["per_turn"]] == ["tool-calls", None]
    r = seeded("sessions", "show", "ses_root")
    assert "turns" in r.stdout and "tool-calls" in r.stdout and "in flight" in r.stdout


def test_unknown_session_exits_1(seeded: Octel) -> None:
    for cmd in ("show", "tree"):
        r = seeded("sessions", cmd, "ses_nope")
        assert r.exit_code == 1
        assert "no archived session 'ses_nope'" in r.stderr


def test_cycles_list_and_summary(seeded: Octel, golden: Golden) -> None:
    r = seeded("cycles", "list")
    assert r.exit_code == 0
    assert "cyc-2" in r.stdout and "worker_timeout" in r.stdout and "in flight" in r.stdout
    page = seeded.json("cycles", "list", "--finished")
    assert [c["cycle_id"] for c in page["items"]] == ["cyc-2", "cyc-1"]
    assert [c["cycle_id"] for c in seeded.json("cycles", "list", "--in-flight")["items"]] == ["cyc-3"]
    golden("cycles_list", page)
    summary = seeded.json("cycles", "summary", "--since", "2026-10-01T00:00:00+00:00")
    golden("cycles_summary", summary)
    assert seeded("cycles", "summary", "--since", "2026-10-01T00:00:00+00:00").exit_code == 0


def test_costs_table_and_json(seeded: Octel, golden: Golden) -> None:
    r = seeded("costs", "--by", "agent,model", "--top", "2", "--since", "all")
    assert r.exit_code == 0, r.output
    for text in ("claude", "opencode", "triage", "total", "most expensive trees", "$0.7600"):
        assert text in r.stdout
    assert "claude run run-turns" in r.stdout  # Claude CLI runs rank with the sessions
    until = "2026-11-10T00:00:00+00:00"  # a fixed window: the answer's `until` is its end
    golden(
        "costs_by_driver_day",
        seeded.json("costs", "--by", "driver,day", "--top", "1", "--since", "all", "--until", until),
    )


def test_costs_default_to_the_last_seven_days_as_the_console_does(seeded: Octel) -> None:
    from datetime import timedelta

    from storeseed import add, session

    from telemetry.timeutil import utcnow

    recent = utcnow() - timedelta(days=2)
    add(seeded.engine, session("ses_recent", cost_usd=0.25, created_at=recent, archived_at=recent))
    got = seeded.json("costs")
    assert got["totals"]["count"] == 1 and got["totals"]["cost_usd"] == 0.25
    assert (utcnow() - datetime.fromisoformat(got["since"])).days == 7
    assert seeded.json("costs", "--since", "all")["totals"]["count"] == 10  # 6 seeded + 3 runs + 1


def test_sessions_show_prints_the_cycle_posted_with_the_session(seeded: Octel) -> None:
    """cyc-1 was posted with session_id ses_root: the subagent ses_child_a belongs to it too."""
    r = seeded("sessions", "show", "ses_child_a")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if x.startswith("cycle"))
    assert "cyc-1" in line and "driver review" in line and "done" in line
    shown = seeded.json("sessions", "show", "ses_other")  # archived with a label only
    assert shown["session"]["cycle_id"] == "cyc-2"
    assert (shown["cycle"]["driver"], shown["cycle"]["terminal_state"]) == ("implementer", "failed")


def test_sessions_list_has_a_title_column(seeded: Octel) -> None:
    r = seeded("sessions", "list")
    header = next(x for x in r.stdout.splitlines() if "session" in x and "agent" in x)
    assert "title" in header
    assert "Fix flaky test in parser" in r.stdout


def test_markup_in_user_data_is_printed_as_is(octel: Octel) -> None:
    """Titles, labels and errors come from agents and people: rich markup in them is text."""
    from storeseed import add, session

    add(octel.engine, session("ses_m", title="[bold]not bold[/bold] [WIP]", label="[red]x", error_kind="[/]"))
    r = octel("sessions", "list")
    assert r.exit_code == 0 and "[red]x" in r.stdout
    shown = octel("sessions", "show", "ses_m")
    assert shown.exit_code == 0, shown.stderr
    assert "[bold]not bold[/bold]" in shown.stdout and "[/]" in shown.stdout
