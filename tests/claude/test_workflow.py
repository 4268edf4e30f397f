"""Workflow runs: the agents a ``Workflow`` script launched, read with the run's journal."""

from __future__ import annotations

import shutil
from pathlib import Path

import jsonschema
import orjson
import pytest
from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, usage, user, write

from archiver.archive import serialise
from archiver.claude.document import build_claude_documents
from archiver.claude.layout import find_sessions, session_files
from archiver.claude.loading import load_tree, tree_of_file
from archiver.claude.tree import ClaudeTree, build_tree
from archiver.claude.workflow import JournalFile, read_journal
from archiver.redact import Redactor

RUN = "wf_3c1d9a7e-5b2"
SID = "7f3b2c10-9e4d-4a61-b0c2-5d8e1f2a3b4c"
SRC = FIXTURES / "w_workflow_run"
AT = "2026-11-30T12:00:00+00:00"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    shutil.copytree(SRC / "projects", tmp_path / "projects")
    return tmp_path


def _run_dir(config: Path) -> Path:
    return config / "projects" / "-home-dev-project" / SID / "subagents" / "workflows" / RUN


def _tree(config: Path) -> ClaudeTree:
    (files,) = find_sessions(config)
    return load_tree(files)


def _input(tree: ClaudeTree) -> int:
    return sum(
        m["info"]["tokens"]["input"]
        for s in tree.sessions
        for m in s.messages
        if m["info"]["role"] == "assistant"
    )


def _file_input(path: Path) -> int:
    """Input tokens of one transcript as its lines say, each message id once."""
    seen: dict[str, int] = {}
    for line in path.read_bytes().splitlines():
        obj = orjson.loads(line)
        msg = obj.get("message") or {}
        if obj.get("type") == "assistant" and msg.get("usage"):
            seen[msg["id"]] = msg["usage"]["input_tokens"]
    return sum(seen.values())


def test_run_agents_hang_under_the_workflow_call(config: Path) -> None:
    tree = _tree(config)
    root, *agents = tree.sessions
    assert root.session_id == SID and len(agents) == 3
    by_label = {s.workflow["label"]: s for s in agents if s.workflow}
    assert set(by_label) == {"list:repo", "list:docs", "review"}
    for s in agents:
        assert s.parent_id == SID and s.depth == 1 and s.tool_use_id == "toolu_fake0001"
    assert by_label["list:repo"].workflow == {
        "run_id": RUN,
        "key": by_label["list:repo"].workflow["key"],
        "label": "list:repo",
        "phase": "Survey",
        "status": "done",
        "result": {"files": ["README.md", "calc.py"]},
    }
    assert by_label["list:repo"].title == "list:repo" and by_label["list:docs"].workflow["status"] == "done"


def test_an_agent_the_journal_names_without_a_transcript_is_shown_and_reported(config: Path) -> None:
    tree = _tree(config)
    (review,) = [s for s in tree.sessions if s.workflow and s.workflow["label"] == "review"]
    assert review.workflow["status"] == "failed" and review.messages == []
    assert [(e.error_kind, e.session_id) for e in tree.errors] == [("not_found", review.session_id)]


def test_usage_is_the_transcripts_counted_once(config: Path) -> None:
    """The journal holds no usage: the tree counts the main file and each agent file, once."""
    files = [
        config / "projects" / "-home-dev-project" / f"{SID}.jsonl",
        *_run_dir(config).glob("agent-*.jsonl"),
    ]
    assert _input(_tree(config)) == sum(_file_input(p) for p in files) > 0


def test_documents_carry_the_run_and_roll_it_up(config: Path) -> None:
    schema = orjson.loads((Path(__file__).parents[2] / "schemas" / "archive-v3.json").read_bytes())
    docs = build_claude_documents(_tree(config), archived_at=AT)
    for doc in docs:  # as written: redacted, every string checked
        jsonschema.validate(orjson.loads(serialise(doc, Redactor(b"0" * 32))[0]), schema)
    root, *agents = docs
    assert "workflow" not in root["claude"]
    assert {d["claude"]["workflow"]["status"] for d in agents} == {"done", "failed"}
    own = sum(d["totals"]["tokens"]["input"] for d in docs)
    assert root["subtree"]["tokens"]["input"] == own and root["subtree"]["sessions"] == 4


def test_journal_growing_changes_the_session_files(config: Path) -> None:
    """A re-import opens a session whose journal grew: the journal is one of its files."""
    (files,) = find_sessions(config)
    assert _run_dir(config) / "journal.jsonl" in list(files.paths())
    again = session_files(config, SID)
    assert again is not None and again.journals == files.journals


def test_truncated_journal_line_is_read_as_far_as_it_goes(config: Path) -> None:
    journal = _run_dir(config) / "journal.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data[: data.rindex(b'{"type":"failed"') + 20])  # being written
    tree = _tree(config)
    kinds = sorted(e.error_kind for e in tree.errors)
    assert kinds == ["not_found", "truncated"]
    (review,) = [s for s in tree.sessions if s.workflow and s.workflow["label"] == "review"]
    assert review.workflow["status"] == "started"


def test_truncated_agent_transcript_and_missing_meta(config: Path) -> None:
    run = _run_dir(config)
    (run / "agent-a9c0b1d2e3f4a5b6c.meta.json").unlink()
    cut = run / "agent-a4f5e6e5240ea7a78.jsonl"
    cut.write_bytes(cut.read_bytes()[:-40])
    tree = _tree(config)
    assert sorted(e.error_kind for e in tree.errors) == ["missing_meta", "not_found", "truncated"]
    # still placed by the run id, not by the (missing) meta file
    assert all(s.parent_id == SID and s.depth == 1 for s in tree.sessions[1:])


def test_run_without_its_session_file(config: Path) -> None:
    (config / "projects" / "-home-dev-project" / f"{SID}.jsonl").unlink()
    tree = _tree(config)
    kinds = {e.error_kind for e in tree.errors}
    assert {"orphan", "not_found"} <= kinds
    assert tree.sessions[0].messages == [] and [s.depth for s in tree.sessions] == [0, 1, 1, 1]
    assert _input(tree) == sum(_file_input(p) for p in _run_dir(config).glob("agent-*.jsonl"))


def test_journal_without_any_agent_file(config: Path) -> None:
    for p in _run_dir(config).glob("agent-*"):
        p.unlink()
    tree = _tree(config)
    assert [s.workflow["status"] for s in tree.sessions[1:] if s.workflow] == ["done", "done", "failed"]
    assert [e.error_kind for e in tree.errors] == ["not_found"] * 3
    assert _input(tree) == _file_input(config / "projects" / "-home-dev-project" / f"{SID}.jsonl")


def test_one_agent_file_in_two_places_counts_once(config: Path) -> None:
    before = _tree(config)
    run = _run_dir(config)
    shutil.copy(run / "agent-a4f5e6e5240ea7a78.jsonl", run.parents[1] / "agent-a4f5e6e5240ea7a78.jsonl")
    tree = _tree(config)
    assert "duplicate" in {e.error_kind for e in tree.errors}
    assert len(tree.sessions) == len(before.sessions) and _input(tree) == _input(before)


def test_tree_of_the_session_file_reads_its_runs(config: Path) -> None:
    tree = tree_of_file(config / "projects" / "-home-dev-project" / f"{SID}.jsonl")
    assert len(tree.sessions) == 4 and all(s.workflow for s in tree.sessions[1:])


def test_read_journal_shapes() -> None:
    lines = [
        {"type": "launched", "hiddenScriptSha256": "ab"},
        {"type": "started", "key": "v2:k1", "agentId": "a1", "label": "x"},
        {"type": "failed", "key": "v2:k1", "agentId": "a1"},
        # respawned under the same key, a new agent id; its result names no agent
        {"type": "started", "key": "v2:k1", "agentId": "a2"},
        {"type": "result", "key": "v2:k1", "agentId": "", "result": None},
        {"type": "result", "key": "v2:k2", "agentId": "a3", "result": [1], "cached": True},
        {"type": "result", "result": "nobody"},
        {"type": "teleported", "key": "v2:k9"},
    ]
    run = read_journal(JournalFile("journal.jsonl", "wf_1", jsonl(lines)))
    assert run.launched and run.unknown_types == {"teleported": 1}
    assert {a.agent_id: a.status for a in run.agents.values()} == {
        "a1": "failed",
        "a2": "done",
        "a3": "cached",
    }
    assert [e.error_kind for e in run.errors] == ["malformed"]


def test_workflow_call_in_a_subagent_places_the_run_one_deeper() -> None:
    """A run launched from a subagent hangs under that subagent, at its depth plus one."""
    from archiver.claude.tree import SubagentFile

    main = [
        user("s", "go"),
        *assistant("s", "m1", [tool_use("c1", "Agent", prompt="plan it")]),
        user("s", tool_result("c1", "done"), toolUseResult={"agentId": "p1"}),
    ]
    planner = [
        user("s", "plan it", agentId="p1", isSidechain=True),
        *assistant("s", "m2", [tool_use("c2", "Workflow", scriptPath="x.js")], agentId="p1"),
        user("s", tool_result("c2", "launched"), agentId="p1", toolUseResult={"runId": "wf_9"}),
    ]
    worker = [
        user("s", "work", agentId="w1"),
        *assistant("s", "m3", [{"type": "text", "text": "ok"}], usage(7)),
    ]
    meta = orjson.dumps({"agentType": "workflow-subagent", "spawnDepth": 1})
    tree = build_tree(
        "s",
        jsonl(main),
        [
            SubagentFile("agent-p1.jsonl", "p1", jsonl(planner), orjson.dumps({"toolUseId": "c1"})),
            SubagentFile("wf_9/agent-w1.jsonl", "w1", jsonl(worker), meta, "wf_9"),
        ],
        journals=[
            JournalFile(
                "wf_9/journal.jsonl", "wf_9", jsonl([{"type": "started", "key": "v2:a", "agentId": "w1"}])
            )
        ],
    )
    by_id = {s.session_id: s for s in tree.sessions}
    w = by_id["s.agent-w1"]
    assert w.parent_id == "s.agent-p1" and w.depth == 2 and w.tool_use_id == "c2" and not tree.errors
    assert w.workflow is not None and w.workflow["status"] == "started"


def test_workflow_run_folder_nested_under_an_agent_id(tmp_path: Path) -> None:
    """Other versions nest the run deeper (``subagents/<id>/workflows/<run>/``): read alike."""
    project = tmp_path / "projects" / "-w"
    write(
        project / "s.jsonl",
        [
            user("s", "go"),
            *assistant("s", "m1", [tool_use("c1", "Workflow", script="x")]),
            user("s", tool_result("c1", "launched"), toolUseResult={"runId": "wf_7"}),
        ],
    )
    run = project / "s" / "subagents" / "a0" / "workflows" / "wf_7"
    write(
        run / "agent-w2.jsonl",
        [user("s", "work", agentId="w2"), *assistant("s", "m2", [{"type": "text", "text": "k"}])],
    )
    (run / "agent-w2.meta.json").write_text('{"agentType": "workflow-subagent", "spawnDepth": 1}')
    (run / "journal.jsonl").write_bytes(
        jsonl([{"type": "started", "key": "v2:b", "agentId": "w2", "label": "one"}])
    )
    tree = _tree(tmp_path)
    assert [(s.parent_id, s.depth, s.title) for s in tree.sessions[1:]] == [
        ("s", 1, "one")
    ] and not tree.errors


def test_a_grown_journal_is_picked_up_by_the_read_from_where_it_stopped(config: Path, tmp_path: Path) -> None:
    """Only the journal grew (a failed agent's call returned on a retry): the next import
    resumes the session and its archive says what a read of the whole files says."""
    import json

    from typer.testing import CliRunner

    from cli import app

    data = tmp_path / "data"
    args = ["--data-dir", str(data), "import", "claude", str(config), "--json"]

    def run() -> dict[str, object]:
        r = CliRunner().invoke(app, args)
        return dict(json.loads(r.stdout))

    def review() -> tuple[dict[str, object], dict[str, dict[str, object]]]:
        docs = {}
        for p in (data / "archives").iterdir():
            doc = orjson.loads(p.read_bytes())
            doc.pop("archived_at")
            docs[doc["session_id"]] = doc
        (wf,) = [
            d["claude"]["workflow"]
            for d in docs.values()
            if d["claude"].get("workflow", {}).get("label") == "review"
        ]
        return wf, docs

    run()
    assert review()[0]["status"] == "failed"
    journal = _run_dir(config) / "journal.jsonl"
    key = next(orjson.loads(x)["key"] for x in journal.read_bytes().splitlines() if b'"review"' in x)
    line = {"type": "result", "key": key, "agentId": "a1e2d3c4b5a6f7e8d", "result": "reviewed on retry"}
    with journal.open("ab") as fh:
        fh.write(orjson.dumps(line) + b"\n")
    assert run()["resumed"] == 1
    wf, resumed = review()
    assert (wf["status"], wf["result"]) == ("done", "reviewed on retry")
    (data / "claude-import-state.json").unlink()  # the next import reads every file whole
    assert run()["resumed"] == 0
    assert review()[1] == resumed
