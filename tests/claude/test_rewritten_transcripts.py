"""A transcript users keep rewritten is read as the JSON Lines it was: pretty-printed, each line an
indented object as `jq .` writes it (dgoffredo/fall published its `claude-session.jsonl` so), or
one JSON array (a hook's rewrite). `octel import claude` read both as "no conversation" and
`octel detect` the pretty-printed one as "not a session"; now both count what the JSON Lines
original counts, and a rewritten file that grows is read whole again, never resumed from an
offset of the lines made of it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from claude_import_rows import import_claude
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from archiver.claude.sniff import as_lines, kind_of
from cli import app

CORPUS = Path(__file__).parents[1] / "corpus" / "claude_published" / "tuning" / "projects"
ORIGINAL = next((CORPUS / "-published-uzaxirr-raze").glob("*.jsonl"))
KINDS = ("input", "output", "cache_read", "cache_write")


def _objects(text: str) -> list[dict[str, Any]]:
    return [json.loads(s) for s in text.splitlines() if s.strip()]


def _pretty(objs: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(o, indent=2, ensure_ascii=False) + "\n" for o in objs)


def _array(objs: list[dict[str, Any]]) -> str:
    return json.dumps(objs, indent=2, ensure_ascii=False)


def _import(cfg: Path, data: Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]], float]:
    report, rows = import_claude(cfg, data)
    tokens = {row.session_id: tuple(getattr(row, f"tokens_{k}") for k in KINDS) for row in rows}
    return report, tokens, sum(row.cost_usd for row in rows)


def _config(tmp_path: Path, name: str, text: str) -> Path:
    project = tmp_path / name / "projects" / "-home-dev-p"
    project.mkdir(parents=True)
    (project / ORIGINAL.name).write_text(text, encoding="utf-8")
    return tmp_path / name


def _check(tmp_path: Path, rewrite: Callable[[list[dict[str, Any]]], str]) -> None:
    objs = _objects(ORIGINAL.read_text(encoding="utf-8"))
    _, want, want_cost = _import(_config(tmp_path, "orig", ORIGINAL.read_text()), tmp_path / "d1")
    assert any(v[1] for v in want.values())
    cfg = _config(tmp_path, "rewritten", rewrite(objs[: len(objs) // 2]))
    report, got, _ = _import(cfg, tmp_path / "d2")
    assert report["archived"] == 1 and report["empty"] == 0
    # it grows, rewritten whole again: read whole, counted once
    (next((cfg / "projects").glob("*/*.jsonl"))).write_text(rewrite(objs), encoding="utf-8")
    report, got, cost = _import(cfg, tmp_path / "d2")
    assert report["archived"] == 1 and report["problems"] == []
    assert got == want and cost == want_cost


def test_a_pretty_printed_transcript_counts_what_its_lines_count(tmp_path: Path) -> None:
    _check(tmp_path, _pretty)


def test_a_transcript_rewritten_as_one_array_counts_what_its_lines_count(tmp_path: Path) -> None:
    _check(tmp_path, _array)


def test_detect_reads_a_pretty_printed_transcript(tmp_path: Path) -> None:
    path = tmp_path / "claude-session.jsonl"
    path.write_text(_pretty(_objects(ORIGINAL.read_text())), encoding="utf-8")
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "detect", str(path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["messages"] > 0


def test_pretty_printed_lines_are_told_by_their_first_object() -> None:
    objs = _objects(ORIGINAL.read_text())
    assert kind_of(_pretty(objs).encode()[:2000]) == "pretty"
    assert kind_of(_pretty(objs).encode()) == "pretty"
    # a pretty-printed result is still a result, and other JSON is none of them
    result = {"type": "result", "subtype": "success", "session_id": "s", "total_cost_usd": 0.1}
    assert kind_of(json.dumps(result, indent=2).encode()) == "result"
    assert kind_of(_pretty([{"name": "x"}, {"name": "y"}]).encode()) is None


_line = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system"]), "sessionId": st.just("s")},
    optional={
        "message": st.dictionaries(st.text(max_size=5), st.text() | st.integers() | st.none(), max_size=4),
        "text": st.text(),
    },
)


@given(st.lists(_line, min_size=1, max_size=8), st.sampled_from([0, 1, 2, 4]))
def test_as_lines_gives_back_the_lines_however_indented(objs: list[dict[str, Any]], indent: int) -> None:
    text = "\n".join(json.dumps(o, indent=indent or None) for o in objs) + "\n"
    got = as_lines(text.encode())
    assert got is not None
    assert [json.loads(s) for s in got.splitlines()] == objs
