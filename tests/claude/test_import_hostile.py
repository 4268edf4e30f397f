"""`octel import claude` on a folder a demanding user really has: cut lines, binary garbage,
empty files, folders and looping links named like transcripts, lines of every odd shape, a
line past the archive size limit. Each bad file is reported by path and skipped, the good
sessions are archived, a session left unarchived makes the exit code 1, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES, any_json, assistant, mutated_lines, user, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from archiver.batch import Prepared
from archiver.claude import pool
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.lines import MAX_LISTED, read_lines
from archiver.claude.tree import ClaudeTree, SubagentFile, build_tree
from archiver.redact import Redactor
from cli import app

SECRET = "ghp_" + "FAKEfakeFAKEfakeFAKEfakeFAKEfake1234"
MAIN = next((FIXTURES / "d_subagent_tree" / "json" / "projects").glob("*/*.jsonl"))
SUB = next((FIXTURES / "d_subagent_tree" / "json" / "projects").glob("*/*/subagents/*.jsonl"))
META = orjson.loads(SUB.with_name(SUB.stem + ".meta.json").read_bytes())
LINES = [orjson.loads(x) for x in [*MAIN.read_bytes().splitlines(), *SUB.read_bytes().splitlines()] if x]


def _hostile_folder(tmp_path: Path) -> Path:
    project = tmp_path / "claude" / "projects" / "-work"
    write(project / "good.jsonl", [user("good", f"token {SECRET}"), *assistant("good", "m1", [])])
    whole = MAIN.read_bytes()
    (project / "cut.jsonl").write_bytes(whole[:-40])
    (project / "garbage.jsonl").write_bytes(bytes(range(256)) * 20)
    (project / "empty.jsonl").write_bytes(b"")
    (project / "folder.jsonl").mkdir()
    (project / "loop.jsonl").symlink_to(project / "loop.jsonl")
    odd = [
        {"type": "user", "message": {"content": 5}},
        {"type": "assistant", "message": "text"},
        {"type": "user", "message": {"content": {"a": 1}, "tool_calls": 7}},
        {"type": ["user"]},
        [1],
        None,
    ]
    (project / "odd.jsonl").write_bytes(b"\n".join(orjson.dumps(x) for x in odd) + b"\n")
    big = user("big", "x" * 300_000)
    write(project / "big.jsonl", [user("big", "hi"), big])
    return tmp_path / "claude"


def test_each_bad_file_is_reported_and_the_rest_imported(tmp_path: Path) -> None:
    cfg = _hostile_folder(tmp_path)
    env = {"OCTEL_ARCHIVE_MAX_BYTES": "200000"}
    args = ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg), "--json"]
    r = CliRunner().invoke(app, args, env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 1, r.output  # `big` could not be archived
    report: dict[str, Any] = json.loads(r.stdout)
    # all but `big`, and the two files with no conversation in them: reported, not archived
    assert (report["sessions"], report["archived"], report["empty"]) == (6, 3, 2)
    where: dict[str, set[str]] = {}
    for p in report["problems"]:
        where.setdefault(Path(str(p.get("path") or "")).name, set()).add(p["error_kind"])
    assert where["folder.jsonl"] == where["loop.jsonl"] == {"unreadable"}
    assert where["cut.jsonl"] == {"truncated"} and {"malformed", "empty"} <= where["garbage.jsonl"]
    assert where["empty.jsonl"] == {"empty"}
    assert where["odd.jsonl"] == {"malformed"}  # its lines that are not objects
    assert any("more than the limit" in str(p["message"]) for p in report["problems"])
    stored = b"".join(p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file())
    assert SECRET.encode() not in stored
    again = CliRunner().invoke(app, args, env=env)  # what failed is tried again, the rest is not
    assert again.exit_code == 1 and json.loads(again.stdout)["unchanged"] == 5


def test_a_table_run_names_what_was_left_out_first(tmp_path: Path) -> None:
    cfg = _hostile_folder(tmp_path)
    args = ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg)]
    r = CliRunner().invoke(app, args, env={"OCTEL_ARCHIVE_MAX_BYTES": "200000"})
    assert r.exit_code == 1 and "Traceback" not in r.output
    first = r.stdout.splitlines()[1:4]
    assert any("folder.jsonl" in x for x in first) and any("loop.jsonl" in x for x in first)


def _bytes(lines: list[Any]) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()  # ints past 64 bits too


@given(mutated_lines(LINES), mutated_lines(LINES), st.one_of(st.just(META), any_json))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_transcript_line_of_any_shape_stops_the_reader(main: list[Any], sub: list[Any], meta: Any) -> None:
    agent = SubagentFile("agent-a1.jsonl", "a1", _bytes(sub), json.dumps(meta).encode(), None)
    tree = build_tree("s", _bytes(main), [agent], main_name="s.jsonl")
    prepare_claude_tree(tree, Redactor(b"k" * 32), label=None)


def test_a_session_the_reader_fails_on_is_reported_and_the_import_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault no reader foresaw, in one session: that session is a problem, never the end."""
    project = tmp_path / "claude" / "projects" / "-work"
    for sid in ("a-ok", "boom", "z-ok"):
        write(project / f"{sid}.jsonl", [user(sid, "hi")])
    real = pool.prepare_claude_tree

    def faulty(tree: ClaudeTree, *args: Any, **kw: Any) -> Prepared:
        if tree.root_id == "boom":
            raise RecursionError("maximum recursion depth exceeded")
        return real(tree, *args, **kw)

    monkeypatch.setattr(pool, "prepare_claude_tree", faulty)
    args = ["--data-dir", str(tmp_path / "data"), "import", "claude", str(tmp_path / "claude"), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    report = json.loads(r.stdout)
    assert report["archived"] == 2
    (problem,) = report["problems"]
    assert problem["session_id"] == "boom" and problem["error_kind"] == "unreadable"
    assert "RecursionError" in problem["message"] and problem["path"].endswith("boom.jsonl")


@given(st.integers(0, 60), st.integers(0, 5))
@settings(max_examples=40, deadline=None)
def test_a_file_of_garbage_lists_a_few_bad_lines_and_counts_the_rest(bad: int, good: int) -> None:
    data = b"".join([b"\xff\xfe garbage\n"] * bad + [b'{"type": "user"}\n'] * good)
    read = read_lines(data, name="g.jsonl")
    assert len(read.objects) == good and read.consumed == len(data)
    messages = [e.message for e in read.errors]
    assert len(messages) == min(bad, MAX_LISTED) + (bad > MAX_LISTED)
    if bad > MAX_LISTED:
        assert messages[-1] == f"{bad - MAX_LISTED} more malformed lines, not listed"
