"""Claude Code trees archived like OpenCode trees: schema v3, redaction, costs, the index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from archiver_fakes import tree_from_fixture
from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, user
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.archive import serialise
from archiver.claude.document import build_claude_documents
from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.claude.stream import tree_from_stream
from archiver.claude.tree import build_tree
from archiver.document import build_documents
from archiver.files import read_archive, upgrade
from archiver.redact import Redactor
from telemetry.services.claude.importer import archive_claude
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

ROOT = Path(__file__).parents[2]
V3 = json.loads((ROOT / "schemas" / "archive-v3.json").read_text())
V2 = json.loads((ROOT / "schemas" / "archive-v2.json").read_text())
AT = "2026-11-30T10:00:00.000Z"
RUNS = sorted(p.name for p in FIXTURES.iterdir() if (p / "json").is_dir())
KEY = b"0" * 32


def _docs(run: str, mode: str = "json") -> list[dict[str, Any]]:
    (files,) = find_sessions(FIXTURES / run / mode)
    return build_claude_documents(load_tree(files), archived_at=AT)


@pytest.mark.parametrize("run", RUNS)
def test_claude_documents_match_the_schema(run: str) -> None:
    for doc in _docs(run):
        written = orjson.loads(serialise(doc, Redactor(KEY))[0])
        jsonschema.validate(written, V3)
        assert set(written) == set(V3["required"])
        assert set(written["claude"]) == set(V3["properties"]["claude"]["required"])
        assert written["source"]["kind"] == "claude_code"


def test_stream_json_documents_match_the_schema() -> None:
    tree = tree_from_stream((FIXTURES / "d2_subagent_background" / "stream-json.stdout.jsonl").read_bytes())
    docs = build_claude_documents(tree, archived_at=AT)
    for doc in docs:
        jsonschema.validate(orjson.loads(serialise(doc, Redactor(KEY))[0]), V3)
    assert len(docs[0]["claude"]["results"]) == 2 and docs[0]["cost_check"]["comparable"] is False


def test_opencode_documents_carry_their_kind_and_v2_files_still_read() -> None:
    fx = orjson.loads((ROOT / "tests" / "fixtures" / "opencode" / "healthy.json").read_bytes())
    (doc, *_) = build_documents(tree_from_fixture(fx), archived_at=AT)
    written = orjson.loads(serialise(doc, Redactor(KEY))[0])
    jsonschema.validate(written, V3)
    assert written["source"]["kind"] == "opencode" and written["claude"] is None
    old = {k: v for k, v in written.items() if k not in ("claude", "cost_check")}
    old["schema_version"] = 2
    old["source"] = {k: v for k, v in written["source"].items() if k not in ("kind", "origin")}  # v3 words
    old["per_turn"] = [{k: v for k, v in t.items() if k != "cost_source"} for t in written["per_turn"]]
    jsonschema.validate(old, V2)
    again = upgrade(old)
    jsonschema.validate(again, V3)
    assert again["upgraded_from"] == 2 and again["source"]["kind"] == "opencode"


def test_tree_position_and_costs_own_and_rolled_up() -> None:
    root, child = _docs("d_subagent_tree")
    assert (root["depth"], child["depth"], child["parent_session_id"]) == (0, 1, root["session_id"])
    assert (
        child["claude"]["tool_use_id"] == "toolu_fake0001"
        and child["subagent_title"] == "List repository files"
    )
    assert root["subtree"]["cost"] == pytest.approx(root["totals"]["cost"] + child["totals"]["cost"])
    check = root["cost_check"]
    assert check["reported_from"] == "cost-state" and not check["mismatch"]
    assert check["computed_usd"] == pytest.approx(0.174432) and child["cost_check"] is None


def _with_result(total: float, models: dict[str, Any] | None = None) -> dict[str, Any]:
    lines = [
        user("s", "x"),
        *assistant("s", "m1", [{"type": "text", "text": "a"}], model="claude-sonnet-4-5"),
    ]
    tree = build_tree("s", jsonl(lines))
    tree.results = [{"type": "result", "total_cost_usd": total, "modelUsage": models or {}}]
    return build_claude_documents(tree, archived_at=AT)[0]["cost_check"]


def test_a_cost_that_differs_from_the_cli_is_flagged_with_both_shown() -> None:
    ok = _with_result(100 * 3e-6 + 10 * 15e-6)
    assert not ok["mismatch"] and ok["reported_usd"] == pytest.approx(ok["computed_usd"])
    off = _with_result(0.5, {"claude-sonnet-4-5": {"inputTokens": 100, "outputTokens": 10, "costUSD": 0.5}})
    assert (
        off["mismatch"]
        and off["reported_usd"] == 0.5
        and off["difference_usd"] == pytest.approx(0.00045 - 0.5)
    )
    assert off["reported_models"]["claude-sonnet-4-5"]["cost"] == 0.5


def test_an_unpriced_model_is_flagged_not_free() -> None:
    lines = [user("s", "x"), *assistant("s", "m1", [{"type": "text", "text": "a"}], model="mystery-1")]
    tree = build_tree("s", jsonl(lines))
    tree.results = [{"type": "result", "total_cost_usd": 0.01}]
    check = build_claude_documents(tree, archived_at=AT)[0]["cost_check"]
    assert check["unpriced_models"] == ["mystery-1"] and check["mismatch"]


@pytest.fixture
def claude_settings(tmp_path: Path, engine: Engine) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=engine.url.render_as_string(hide_password=False),
        redact_values="configured-secret-value-1",
        _env_file=None,  # type: ignore[call-arg]
    )


def test_archived_and_indexed_with_the_same_redactor(claude_settings: Settings, engine: Engine) -> None:
    secret = "configured-secret-value-1"
    lines = [
        user("s1", f"use the password {secret}"),
        *assistant("s1", "m1", [tool_use("c1", command=f"echo {secret}")]),
        user("s1", tool_result("c1", f"{secret}\nAKIAIOSFODNN7EXAMPLE")),
    ]
    out = archive_claude(build_tree("s1", jsonl(lines)), settings=claude_settings, engine=engine)
    assert out.ok, out.to_dict()
    (path,) = out.files
    text = path.read_text()
    assert secret not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    assert read_archive(path)["redaction"]
    with session_scope(engine) as db:
        row = db.exec(select(SessionIndex).where(SessionIndex.session_id == "s1")).one()
        assert row.source == "claude_code" and secret not in (row.title or "")


def test_index_rows_carry_source_costs_and_the_reported_total(
    claude_settings: Settings, engine: Engine
) -> None:
    (files,) = find_sessions(FIXTURES / "d_subagent_tree" / "json")
    tree = load_tree(files)
    for _ in range(2):  # archiving again keeps one row per session
        out = archive_claude(tree, settings=claude_settings, engine=engine)
        assert out.ok
    with session_scope(engine) as db:
        rows = db.exec(select(SessionIndex).order_by(SessionIndex.depth)).all()
        assert [(r.depth, r.source) for r in rows] == [(0, "claude_code"), (1, "claude_code")]
        assert rows[0].subtree_cost_usd == pytest.approx(0.174432) and rows[
            0
        ].reported_cost_usd == pytest.approx(0.174432)
        assert not rows[0].cost_mismatch and rows[1].parent_session_id == rows[0].session_id


def test_a_broken_transcript_is_archived_as_far_as_it_goes(
    claude_settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    src = FIXTURES / "b_bash_tool" / "json"
    work = tmp_path / "cfg"
    shutil.copytree(src, work)
    (files,) = find_sessions(work)
    assert files.main is not None
    files.main.write_bytes(files.main.read_bytes() + b'{"type": "assistant", "mess')
    out = archive_claude(load_tree(files), settings=claude_settings, engine=engine)
    assert (
        out.result is not None
        and out.files
        and [e["error_kind"] for e in out.result.walk_errors] == ["truncated"]
    )
    assert read_archive(out.files[0])["walk_errors"][0]["error_kind"] == "truncated"


@pytest.mark.parametrize("run", RUNS)
def test_a_document_checked_unparsed_is_the_one_its_bytes_hold(run: str) -> None:
    """When the redactor replaces nothing, the import checks and indexes the document as built
    instead of parsing its bytes again: it must be what those bytes parse to. When it replaces
    something, the bytes are parsed (the built document still holds the secret)."""
    from archiver.archive import serialise_held

    unparsed = 0
    for doc in _docs(run):
        data, _, held = serialise_held(doc, Redactor(KEY))
        assert held is None or held == orjson.loads(data)
        unparsed += held is not None
        secret = {**doc, "title": "key AKIAIOSFODNN7EXAMPLE here"}
        data, counts, held = serialise_held(secret, Redactor(KEY))
        assert held is None and counts and b"AKIAIOSFODNN7EXAMPLE" not in data
    assert unparsed  # the captured runs hold no secret: checked as built
