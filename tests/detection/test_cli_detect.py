"""`octel detect` on files, folders, a stored session id and a labelled corpus."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from detectors import REGISTRY

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"
CORPUS = Path(__file__).parents[1] / "corpus"


@pytest.fixture
def run(tmp_path: Path) -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    base = ["--data-dir", str(tmp_path / "data")]
    r = runner.invoke(app, [*base, "detect", *args])
    return r.exit_code, r.stdout, " ".join(r.stderr.split())  # rich wraps long errors


def test_a_recorded_run(run: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(run, tmp_path, str(FIXTURES / "doom_loop.json"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == "stuck"
    assert [f["detector"] for f in doc["findings"]] == ["doom_loop"]
    assert doc["findings"][0]["start_index"] == 1
    code, out, _ = invoke(run, tmp_path, str(FIXTURES / "doom_loop.json"))
    assert code == 0 and "doom_loop" in out and "stuck" in out


def test_all_lists_the_healthy_detectors_too(run: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(run, tmp_path, str(FIXTURES / "healthy.json"), "--json", "--all")
    doc = json.loads(out)
    assert code == 0
    assert doc["verdict"] == "healthy" and len(doc["findings"]) == len(REGISTRY.names())


def test_a_bare_message_list_and_an_archive_file(run: CliRunner, tmp_path: Path) -> None:
    rec = json.loads((FIXTURES / "reasoning_loop.json").read_text())
    sid = rec["root_id"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(rec["messages"][sid]))
    archive = tmp_path / "archive.json"
    doc = {
        "schema_version": 2,
        "session_id": sid,
        "messages": rec["messages"][sid],
        "status_history": rec["status_samples"],
        "permission_events": [],
    }
    archive.write_text(json.dumps(doc))
    _, out, _ = invoke(run, tmp_path, str(bare), "--json")
    assert {f["detector"]: f["verdict"] for f in json.loads(out)["findings"]} == {
        "empty_reasoning": "stuck",
        "silent_stop": "suspect",  # no status history: idle cannot be known
    }
    _, out, _ = invoke(run, tmp_path, str(archive), "--json")
    assert {f["detector"]: f["verdict"] for f in json.loads(out)["findings"]} == {
        "empty_reasoning": "stuck",
        "silent_stop": "stuck",
    }


def test_a_folder(run: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("healthy", "tool_errors"):
        shutil.copy(FIXTURES / f"{name}.json", folder)
    code, out, _ = invoke(run, tmp_path, str(folder), "--json")
    assert code == 0
    assert [(Path(r["source"]).name, r["verdict"]) for r in json.loads(out)] == [
        ("healthy.json", "healthy"),
        ("tool_errors.json", "stuck"),
    ]


def test_eval_on_the_corpus(run: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(run, tmp_path, "--eval", str(CORPUS), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["stuck_recall"] >= 0.9 and doc["false_alarms"] == []
    assert {d["detector"] for d in doc["detectors"]} >= {"doom_loop", "retry_cascade", "permission_deadlock"}
    code, out, _ = invoke(run, tmp_path, "--eval", str(CORPUS))
    assert code == 0 and "precision" in out and "recall" in out


def test_eval_reports_each_set_of_a_split_corpus(run: CliRunner, tmp_path: Path) -> None:
    for part, names in (("dev", ["doom_0", "ok_build_0"]), ("heldout", ["retry_0", "ok_poll_0"])):
        (tmp_path / "c" / part).mkdir(parents=True)
        for n in names:
            shutil.copy(CORPUS / f"{n}.json", tmp_path / "c" / part)
            label = json.loads((CORPUS / f"{n}.label.json").read_text())
            label["pattern_start"] = 1 if label["label"] != "healthy" else -1
            (tmp_path / "c" / part / f"{n}.label.json").write_text(json.dumps(label))
    code, out, _ = invoke(run, tmp_path, "--eval", str(tmp_path / "c"), "--json")
    assert code == 0
    sets = json.loads(out)["sets"]
    assert set(sets) == {"dev", "heldout"}
    for doc in sets.values():
        assert doc["stuck_runs"] == 1 and doc["stuck_detected"] == 1 and doc["right_named"] == 1
        assert doc["healthy_runs"] == 1 and doc["false_alarms"] == []
        assert doc["mean_lag"] is not None and doc["mean_lag"] >= 0
        assert 0 < doc["mean_overlap"] <= 1  # the labelled span against the finding's
        assert all(0 < r["overlap"] <= 1 for r in doc["runs"] if r["label"] != "healthy")
        assert sum(d["on_time"] for d in doc["detectors"]) == doc["on_time"]
    code, out, _ = invoke(run, tmp_path, "--eval", str(tmp_path / "c"))
    words = " ".join(out.split())
    assert code == 0 and "dev" in out and "heldout" in out and "right pattern named" in words
    assert "span overlap" in words and "≤2 turns" in words


def test_eval_with_baselines_names_each_set_and_compares(run: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    for n in ("doom_0", "ok_build_0"):
        shutil.copy(CORPUS / f"{n}.json", tmp_path / "c")
        shutil.copy(CORPUS / f"{n}.label.json", tmp_path / "c")
    (tmp_path / "c" / "about.json").write_text('{"title": "a tiny set"}')
    code, out, _ = invoke(run, tmp_path, "--eval", str(tmp_path / "c"), "--baselines", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["title"] == "a tiny set"
    rows = {b["name"]: b for b in doc["baselines"]}
    assert set(rows) == {"octel", "openhands", "opencode_guard"}
    assert rows["octel"]["flagged"] == 1 and rows["octel"]["stuck_runs"] == 1
    assert all(b["healthy_runs"] == 1 for b in rows.values())
    code, out, _ = invoke(run, tmp_path, "--eval", str(tmp_path / "c"), "--baselines")
    assert code == 0 and "a tiny set" in out and "openhands" in out and "opencode_guard" in out


def test_thresholds_on_the_command_line(run: CliRunner, tmp_path: Path) -> None:
    f = str(FIXTURES / "doom_loop.json")
    limits = ("doom_repeat_stuck=7", "doom_repeat_suspect=7", "doom_repeat_turns_stuck=7")
    _, out, _ = invoke(run, tmp_path, f, "--json", *(a for t in limits for a in ("-t", t)))
    assert json.loads(out)["verdict"] == "healthy"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--eval", "missing_dir"], "needs a folder"),
        (["x.json", "-t", "bogus=1"], "unknown threshold"),
        (["x.json", "-t", "novalue"], "NAME=VALUE"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    run: CliRunner, tmp_path: Path, args: list[str], says: str
) -> None:
    code, out, err = invoke(run, tmp_path, *args)
    assert code == 2
    assert says in err and "Traceback" not in err + out


def test_an_unknown_id_is_not_found_as_everywhere(run: CliRunner, tmp_path: Path) -> None:
    """Not found is 1 for every command (`sessions show`, `why`, `detect`): one rule."""
    code, _out, err = invoke(run, tmp_path, "no_such_session")
    assert code == 1 and "neither a file, a folder nor an archived session id" in err


def test_a_file_that_is_not_json(run: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    code, _, err = invoke(run, tmp_path, str(bad))
    assert code == 2 and "bad.json is not a session: not JSON" in err


def test_a_bad_label(run: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "a.label.json").write_text('{"label": "sleepy"}')
    code, _, err = invoke(run, tmp_path, "--eval", str(tmp_path))
    assert code == 2 and "'label' must be one of" in err


def test_an_archived_session_id_from_the_store(run: CliRunner, tmp_path: Path) -> None:
    from sqlmodel import Session

    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade
    from telemetry.store.models import SessionIndex

    rec = json.loads((FIXTURES / "permission_deadlock.json").read_text())
    sid = rec["root_id"]
    archives = tmp_path / "data" / "archives"
    archives.mkdir(parents=True)
    doc = {
        "schema_version": 2,
        "session_id": sid,
        "messages": rec["messages"][sid],
        "status_history": [*rec["status_samples"], {"type": "idle"}],  # the abort ended it
        "permission_events": [e["event"] for e in rec["events"]],
    }
    (archives / "a.json").write_text(json.dumps(doc))
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    upgrade(engine)
    with Session(engine) as db:
        now = datetime.now(UTC)
        row = SessionIndex(
            session_id=sid, root_session_id=sid, archive_path="a.json", content_hash="x", archived_at=now
        )
        db.add(row)
        db.commit()
    engine.dispose()
    code, out, err = invoke(run, tmp_path, sid, "--json")
    assert code == 0, err
    found = json.loads(out)
    assert found["verdict"] == "stuck"
    assert found["findings"][0]["evidence"]["permissions"] == ["bash"]


def test_session_picks_a_child_of_a_recorded_run(run: CliRunner, tmp_path: Path) -> None:
    rec = json.loads((FIXTURES / "subagent_tree.json").read_text())
    root_count = len(rec["messages"][rec["root_id"]])
    child = next(sid for sid, msgs in rec["messages"].items() if len(msgs) != root_count)
    _, out, _ = invoke(run, tmp_path, str(FIXTURES / "subagent_tree.json"), "--json", "--session", child)
    assert json.loads(out)["messages"] == len(rec["messages"][child])
    _, out, _ = invoke(run, tmp_path, str(FIXTURES / "subagent_tree.json"), "--json")
    assert json.loads(out)["messages"] == len(rec["messages"][rec["root_id"]])


def test_what_is_not_a_session_is_refused(run: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "numbers.json"
    bad.write_text("[1, 2, 3]")
    code, out, err = invoke(run, tmp_path, str(bad))
    assert code == 2 and out == ""
    assert "numbers.json is not a session" in err and "array of int" in err


def test_a_file_without_messages_has_no_verdict(run: CliRunner, tmp_path: Path) -> None:
    rec = json.loads((FIXTURES / "healthy.json").read_text())
    status_only = tmp_path / "status.jsonl"
    kinds = ("session.status", "session.idle")
    status_only.write_text("\n".join(json.dumps(e) for e in rec["events"] if e["event"]["type"] in kinds))
    code, out, _ = invoke(run, tmp_path, str(status_only), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] is None and doc["messages"] == 0 and "no messages" in doc["reason"]
    code, out, _ = invoke(run, tmp_path, str(status_only))
    assert "no verdict" in " ".join(out.split()) and "healthy" not in out


def test_logs_and_captures_in_a_folder_and_a_bad_file_skipped(run: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(FIXTURES / "run_format_json.jsonl", folder / "run.jsonl")
    rec = json.loads((FIXTURES / "doom_loop.json").read_text())
    (folder / "events.json").write_text(
        json.dumps([{"timestamp": e["received"], "event": e["event"]} for e in rec["events"]])
    )
    (folder / "junk.json").write_text('{"hello": "world"}')
    code, out, err = invoke(run, tmp_path, str(folder), "--json")
    assert code == 0
    by_name = {Path(r["source"]).name: r for r in json.loads(out)}
    assert by_name["events.json"]["verdict"] == "stuck"
    assert by_name["run.jsonl"]["verdict"] == "healthy" and by_name["run.jsonl"]["messages"] == 3
    assert by_name["junk.json"]["verdict"] is None
    assert "skipped" in err and "junk.json" in err


def test_a_gzip_that_expands_past_the_archive_limit_is_refused(run: CliRunner, tmp_path: Path) -> None:
    import gzip

    from archiver.files import DEFAULT_MAX_BYTES

    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * DEFAULT_MAX_BYTES + b"]", compresslevel=1))
    code, _, err = invoke(run, tmp_path, str(bomb))
    assert code == 2
    assert "bomb.json.gz" in err and "limit" in err


def test_findings_are_said_as_the_console_says_them(run: CliRunner, tmp_path: Path) -> None:
    """One sentence each, "message N" counted from 1; the raw evidence only in --json."""
    code, out, _ = invoke(run, tmp_path, str(FIXTURES / "doom_loop.json"), "--json")
    (f,) = json.loads(out)["findings"]
    assert f["start_index"] == 1 and "ran" in f["sentence"] and "message 2" in f["sentence"]
    assert f["evidence"]["signature"] and f["evidence_links"]
    code, out, _ = invoke(run, tmp_path, str(FIXTURES / "doom_loop.json"))
    flat = " ".join(out.split())
    assert code == 0 and "message 2" in flat and f["sentence"].split(",")[0] in flat
    assert "repetitions=" not in flat and "signature" not in flat  # no raw evidence in the table


def _run_line(kind: str, sid: str, mid: str, part: dict[str, object]) -> str:
    return json.dumps(
        {"type": kind, "timestamp": 1, "sessionID": sid, "part": {**part, "sessionID": sid, "messageID": mid}}
    )


def _two_runs_log() -> str:
    """Two runs writing into one log (as `opencode run --format json >> log` in parallel do),
    one of them glued onto the other's line by the shared writes."""
    lines = []
    for sid, cmd, n in (("ses_a", "make", 6), ("ses_b", "ls", 1)):
        for i in range(n):
            mid = f"msg_{sid}_{i:03d}"
            state = {
                "status": "completed",
                "input": {"command": cmd},
                "output": "same",
                "metadata": {"exit": 0},
            }
            lines.append(
                [
                    _run_line("step_start", sid, mid, {"id": f"p{i}s", "type": "step-start"}),
                    _run_line(
                        "tool_use",
                        sid,
                        mid,
                        {"id": f"p{i}t", "type": "tool", "tool": "bash", "callID": f"c{i}", "state": state},
                    ),
                    _run_line(
                        "step_finish",
                        sid,
                        mid,
                        {"id": f"p{i}f", "type": "step-finish", "reason": "tool-calls"},
                    ),
                ]
            )
    a, b = lines[:6], lines[6:]
    out = [x for step in a for x in step]
    out[-1] += b[0][0]  # glued: no newline between two writers' lines
    out += b[0][1:]
    return "\n".join(out) + "\n"


def test_a_log_of_several_sessions_is_one_tree_each_session_judged(run: CliRunner, tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    log.write_text(_two_runs_log())
    code, out, err = invoke(run, tmp_path, str(log), "--json")
    assert code == 0, err
    doc = json.loads(out)
    by_id = {s["session_id"]: s for s in doc["sessions"]}
    assert set(by_id) == {"ses_a", "ses_b"}
    assert by_id["ses_a"]["verdict"] == "stuck" and by_id["ses_a"]["pattern"] == "doom_loop"
    assert by_id["ses_b"]["verdict"] == "healthy" and by_id["ses_b"]["messages"] == 1
    assert doc["tree_verdict"] == "stuck"
    code, out, _ = invoke(run, tmp_path, str(log))
    assert "2 sessions" in out and "ses_a" in out and "ses_b" in out


def test_an_event_capture_of_parallel_subagents_is_one_tree(run: CliRunner, tmp_path: Path) -> None:
    rec = json.loads((FIXTURES / "subagent_tree.json").read_text())
    cap = tmp_path / "capture.jsonl"
    cap.write_text("\n".join(json.dumps(e) for e in rec["events"]))
    code, out, err = invoke(run, tmp_path, str(cap), "--json")
    assert code == 0, err
    doc = json.loads(out)
    depths = {s["session_id"]: s["depth"] for s in doc["sessions"]}
    assert sorted(depths.values()) == [0, 1, 2] and depths[rec["root_id"]] == 0
    assert all(s["verdict"] is not None for s in doc["sessions"])


def test_a_run_log_without_step_start_lines_still_has_its_messages(run: CliRunner, tmp_path: Path) -> None:
    kept = [
        ln for ln in (FIXTURES / "run_format_json.jsonl").read_text().splitlines() if '"step_start"' not in ln
    ]
    for i, ln in enumerate(kept):  # an older writer: parts that name no message
        d = json.loads(ln)
        d["part"].pop("messageID", None)
        kept[i] = json.dumps(d)
    log = tmp_path / "old.jsonl"
    log.write_text("\n".join(kept))
    code, out, _ = invoke(run, tmp_path, str(log), "--json")
    assert code == 0 and json.loads(out)["messages"] == 3
