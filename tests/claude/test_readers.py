"""Claude Code transcripts and stream-json read into session trees: every layout, every trap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, usage, user, write

from archiver.claude.layout import find_sessions
from archiver.claude.lines import read_lines
from archiver.claude.loading import load_tree
from archiver.claude.stream import tree_from_stream
from archiver.claude.tree import ClaudeTree, SubagentFile, build_tree

RUNS = sorted(p.name for p in FIXTURES.iterdir() if (p / "json").is_dir())


def _tree(run: str, mode: str = "json") -> ClaudeTree:
    (files,) = find_sessions(FIXTURES / run / mode)
    return load_tree(files)


def _cost(tree: ClaudeTree) -> float:
    return sum(m["info"].get("cost", 0.0) for s in tree.sessions for m in s.messages)


def _tokens(tree: ClaudeTree, key: str) -> int:
    return sum(m["info"].get("tokens", {}).get(key, 0) for s in tree.sessions for m in s.messages)


@pytest.mark.parametrize("run", RUNS)
def test_tree_tokens_and_cost_match_what_the_cli_reported(run: str) -> None:
    """Usage counted once per message id, subagents included: the CLI's own totals come out."""
    tree = _tree(run)
    reported = orjson.loads((FIXTURES / run / "json.stdout.json").read_bytes())
    inputs = sum(m["inputTokens"] for m in reported["modelUsage"].values())
    outputs = sum(m["outputTokens"] for m in reported["modelUsage"].values())
    assert not tree.errors and not tree.unknown_types and not tree.unpriced_models
    assert _tokens(tree, "input") == inputs and _tokens(tree, "output") == outputs
    assert _cost(tree) == pytest.approx(reported["total_cost_usd"], abs=1e-9)
    assert tree.cost_state is not None and tree.cost_state["totalCostUSD"] == pytest.approx(_cost(tree))


def test_one_message_per_id_although_the_cli_writes_a_line_per_block() -> None:
    tree = _tree("b_bash_tool")
    (first, *_) = [m for m in tree.sessions[0].messages if m["info"]["role"] == "assistant"]
    assert [p["type"] for p in first["parts"]] == ["thinking", "text", "tool_use"]
    assert first["info"]["tokens"]["input"] == 12_700 or first["info"]["tokens"]["input"] > 0


def test_subagent_is_a_child_of_the_call_that_launched_it() -> None:
    root, child = _tree("d_subagent_tree").sessions
    assert (root.depth, child.depth, child.parent_id) == (0, 1, root.session_id)
    assert child.agent == "general-purpose" and child.tool_use_id == "toolu_fake0001"
    assert child.session_id.startswith(root.session_id + ".agent-")
    assert child.title == "List repository files"
    assert any(p.get("name") == "Bash" for m in child.messages for p in m["parts"])


def test_stream_json_keeps_the_conversation_subagents_and_both_results() -> None:
    tree = tree_from_stream((FIXTURES / "d2_subagent_background" / "stream-json.stdout.jsonl").read_bytes())
    root, child = tree.sessions
    assert len(tree.results) == 2 and tree.origin == "stream-json"
    assert child.parent_id == root.session_id and child.tool_use_id == "toolu_fake0001"
    tools = [p["name"] for m in child.messages for p in m["parts"] if p.get("type") == "tool_use"]
    assert tools == ["Bash"]
    assert tree.cli_version == "2.1.328"


def test_stream_json_keeps_api_retries() -> None:
    tree = tree_from_stream((FIXTURES / "e_retry_529" / "stream-json.stdout.jsonl").read_bytes())
    retries = [m for m in tree.sessions[0].messages if m["info"]["claude"].get("subtype") == "api_retry"]
    assert [m["parts"][0]["attempt"] for m in retries] == [1, 2]


def test_retries_exhausted_is_a_synthetic_api_error() -> None:
    tree = _tree("e3_retries_exhausted")
    (last,) = [m for m in tree.sessions[0].messages if m["info"]["role"] == "assistant"]
    assert last["info"]["synthetic"] and last["info"]["error"]["name"] == "APIError"
    assert last["info"]["error"]["data"]["status"] == 529
    assert last["info"]["cost_source"] == "none"  # nothing was billed: not unpriced
    api_errors = [m for m in tree.sessions[0].messages if m["info"]["claude"].get("subtype") == "api_error"]
    assert len(api_errors) == 2 and api_errors[0]["parts"][0]["retryAttempt"] == 1


def test_no_response_requested_is_harmless() -> None:
    lines = [
        user("s", "hi"),
        *assistant(
            "s", "m1", [{"type": "text", "text": "No response requested."}], usage(0, 0), model="<synthetic>"
        ),
    ]
    (msg,) = [
        m for m in build_tree("s", jsonl(lines)).sessions[0].messages if m["info"]["role"] == "assistant"
    ]
    assert msg["info"]["synthetic"] and msg["info"]["error"] is None


def test_subagent_output_tokens_are_a_running_count() -> None:
    blocks = [{"type": "text", "text": "a"}, tool_use("t1", command="ls")]
    lines = [
        user("s", "go", agentId="ab12"),
        *assistant("s", "m1", blocks[:1], usage(100, 1)),
        *assistant("s", "m1", blocks[1:], usage(100, 37)),
    ]
    tree = build_tree("s", jsonl([user("s", "x")]), [SubagentFile("agent-ab12.jsonl", "ab12", jsonl(lines))])
    (msg,) = [m for m in tree.sessions[1].messages if m["info"]["role"] == "assistant"]
    assert msg["info"]["tokens"]["output"] == 37 and msg["info"]["tokens"]["input"] == 100


def test_progress_lines_never_count() -> None:
    progress = {
        "type": "progress",
        "data": {
            "type": "agent_progress",
            "message": {"type": "assistant", "message": {"id": "m9", "usage": usage(5000, 500)}},
        },
    }
    tree = build_tree(
        "s", jsonl([user("s", "x"), progress, *assistant("s", "m1", [{"type": "text", "text": "ok"}])])
    )
    assert _tokens(tree, "input") == 100 and tree.skipped["progress"] == 1


def test_truncated_last_line_is_read_as_far_as_it_goes() -> None:
    whole = jsonl([user("s", "one"), user("s", "two")])
    cut = whole + b'{"type": "user", "mess'
    read = read_lines(cut, name="s.jsonl")
    assert len(read.objects) == 2 and read.consumed == len(whole)
    assert [e.error_kind for e in read.errors] == ["truncated"]
    tree = build_tree("s", cut)
    assert [e.error_kind for e in tree.errors] == ["truncated"] and len(tree.sessions[0].messages) == 2


def test_bad_and_unknown_lines_are_reported_and_skipped() -> None:
    data = (
        jsonl([user("s", "one")])
        + b"{not json\n[1, 2]\n"
        + jsonl([{"type": "hologram", "x": 1}, user("s", "two")])
    )
    tree = build_tree("s", data)
    assert [e.error_kind for e in tree.errors] == ["malformed", "malformed"]
    assert tree.unknown_types == {"hologram": 1} and len(tree.sessions[0].messages) == 2


def test_missing_meta_still_links_through_the_tool_result(tmp_path: Path) -> None:
    src = FIXTURES / "d_subagent_tree" / "json"
    (files,) = find_sessions(src)
    agent_id, path, _meta = files.subagents[0]
    tree = build_tree(
        files.session_id,
        files.main.read_bytes() if files.main else None,
        [SubagentFile(path.name, agent_id, path.read_bytes(), None)],
    )
    assert [e.error_kind for e in tree.errors] == ["missing_meta"]
    assert tree.sessions[1].parent_id == files.session_id and tree.sessions[1].tool_use_id == "toolu_fake0001"


def test_subagent_without_its_session_file_forms_an_orphan_tree(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-work"
    write(
        project / "sid1" / "subagents" / "agent-aa.jsonl",
        [user("sid1", "look", agentId="aa"), *assistant("sid1", "m1", [{"type": "text", "text": "ok"}])],
    )
    (files,) = find_sessions(tmp_path)
    tree = load_tree(files)
    assert {e.error_kind for e in tree.errors} == {"orphan", "missing_meta"}
    assert [s.depth for s in tree.sessions] == [0, 1] and not tree.sessions[0].messages
    assert _tokens(tree, "input") == 100


def test_2_0_subagent_files_beside_the_session(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-work"
    write(
        project / "sid2.jsonl",
        [
            user("sid2", "start"),
            *assistant("sid2", "m1", [tool_use("call1", "Task", prompt="count files", subagent_type="x")]),
            user("sid2", tool_result("call1", "3 files"), toolUseResult={"agentId": "1a2b3c4d"}),
        ],
    )
    write(
        project / "agent-1a2b3c4d.jsonl",
        [
            user("sid2", "count files", isSidechain=True, agentId="1a2b3c4d"),
            *assistant("sid2", "m2", [tool_use("call2", command="ls")], isSidechain=True, agentId="1a2b3c4d"),
        ],
    )
    (files,) = find_sessions(tmp_path)
    _root, child = load_tree(files).sessions
    assert child.parent_id == "sid2" and child.tool_use_id == "call1" and child.depth == 1


def test_1_0_sidechains_inside_the_main_file_become_children() -> None:
    side = user("s", "find the bug", isSidechain=True)
    lines = [
        user("s", "start"),
        *assistant("s", "m1", [tool_use("c1", "Task", prompt="find the bug")]),
        side,
        *assistant("s", "m2", [{"type": "text", "text": "found"}], isSidechain=True, parentUuid=side["uuid"]),
        user("s", tool_result("c1", "found")),
    ]
    lines[4]["parentUuid"] = None
    tree = build_tree("s", jsonl(lines))
    _root, child = tree.sessions
    assert child.tool_use_id == "c1" and child.parent_id == "s" and not tree.errors
    assert [m["info"]["id"] for m in child.messages if m["info"]["role"] == "assistant"] == ["m2"]
    assert _tokens(tree, "input") == 200


def test_a_sidechain_replaying_its_parent_is_not_counted_twice() -> None:
    shared = assistant("s", "m1", [{"type": "text", "text": "plan"}], usage(1000, 50))
    sub = [user("s", "go", agentId="ab"), *shared, *assistant("s", "m2", [{"type": "text", "text": "x"}])]
    tree = build_tree(
        "s", jsonl([user("s", "go"), *shared]), [SubagentFile("agent-ab.jsonl", "ab", jsonl(sub))]
    )
    assert _tokens(tree, "input") == 1100
    replayed = [m for m in tree.sessions[1].messages if m["info"].get("replayed")]
    assert [m["info"]["id"] for m in replayed if m["info"]["role"] == "assistant"] == ["m1"]


def test_gateway_tool_calls_become_tool_use_parts() -> None:
    line: dict[str, Any] = {
        "type": "assistant",
        "uuid": "u1",
        "sessionId": "s",
        "timestamp": "2026-11-30T10:00:00Z",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "gpt-5",
            "content": "running it",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command": "ls"}'},
                }
            ],
            "usage": usage(),
        },
    }
    tree = build_tree("s", jsonl([user("s", "x"), line]))
    msg = tree.sessions[0].messages[1]
    assert [p["type"] for p in msg["parts"]] == ["text", "tool_use"]
    assert msg["parts"][1]["input"] == {"command": "ls"}
    assert msg["info"]["cost_source"] == "unpriced" and tree.unpriced_models == {"gpt-5"}


def test_line_cost_wins_over_the_price_table() -> None:
    lines = [
        user("s", "x"),
        *[dict(x, costUSD=0.5) for x in assistant("s", "m1", [{"type": "text", "text": "a"}])],
    ]
    msg = build_tree("s", jsonl(lines)).sessions[0].messages[1]
    assert (msg["info"]["cost"], msg["info"]["cost_source"]) == (0.5, "line")
