"""What a transcript's size can do: a line over the limit is refused while it is read, holding
at most the limit; a file with no conversation in it is reported and skipped, not archived."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from claude_lines import assistant, jsonl, user, write
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from archiver.claude import loading
from archiver.claude.layout import SessionFiles
from cli import app


def _import(tmp_path: Path, cfg: Path) -> tuple[int, dict[str, Any]]:
    args = ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg), "--json"]
    r = CliRunner().invoke(app, args)
    return r.exit_code, dict(json.loads(r.stdout))


def test_a_line_over_the_limit_is_refused_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "p" / "s1.jsonl"
    write(path, [user("s1", "hi")])
    with path.open("ab") as fh:  # one 32 MiB line, never ended
        fh.write(b'{"type":"user","message":{"content":"')
        for _ in range(32):
            fh.write(b"x" * (1 << 20))
    tracemalloc.start()
    try:
        tree = loading.load_tree(SessionFiles("s1", "p", path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (refused,) = [e for e in tree.errors if e.error_kind == "too_large"]
    assert refused.what == "line" and "line 2 is longer than 1048576 bytes" in refused.message
    assert peak < 8 << 20  # the limit and a chunk, not the 32 MiB line


def test_lines_under_the_limit_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "MAX_LINE_BYTES", 4096)
    data = jsonl([user("s", "x" * 3000), user("s", "y"), user("s", "z" * 3500)])
    (tmp_path / "f").write_bytes(data)
    assert loading.read_capped(tmp_path / "f", max_line=4096) == data
    assert loading.read_capped(tmp_path / "f", 10, max_line=4096) == data[10:]
    with pytest.raises(loading.LineTooLong):
        loading.read_capped(tmp_path / "f", max_line=3300)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    limit=st.integers(1, 120),
    offset=st.integers(0, 200),
)
def test_a_file_reads_as_its_bytes_unless_a_line_passes_the_limit(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], limit: int, offset: int
) -> None:
    """Whole in one read or in chunks, what is read is the file's bytes from ``offset``;
    refused exactly when a line of them is longer than the limit."""
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path_factory.mktemp("capped") / "f"
    path.write_bytes(data)
    tail = data[offset:]
    if any(len(line) > limit for line in tail.split(b"\n")):
        with pytest.raises(loading.LineTooLong):
            loading.read_capped(path, offset, max_line=limit)
    else:
        assert loading.read_capped(path, offset, max_line=limit) == tail


def test_a_file_with_no_conversation_is_reported_not_archived(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-p"
    for i in range(5):
        (project / f"bad-{i}.jsonl").parent.mkdir(parents=True, exist_ok=True)
        (project / f"bad-{i}.jsonl").write_bytes(b"not json at all\n")
    write(project / "book.jsonl", [{"type": "summary", "summary": "s", "leafUuid": "u"}])
    write(project / "ok.jsonl", [user("ok", "hi"), *assistant("ok", "m", [{"type": "text", "text": "yo"}])])
    code, report = _import(tmp_path, tmp_path / "claude")
    assert code == 0 and (report["sessions"], report["archived"], report["empty"]) == (7, 1, 6)
    empty = sorted(Path(p["path"]).name for p in report["problems"] if p["error_kind"] == "empty")
    assert empty == ["bad-0.jsonl", "bad-1.jsonl", "bad-2.jsonl", "bad-3.jsonl", "bad-4.jsonl", "book.jsonl"]
    assert len(list((tmp_path / "data" / "archives").rglob("*.json*"))) == 1
    code, again = _import(tmp_path, tmp_path / "claude")  # remembered: not read again
    assert code == 0 and again["unchanged"] == 7 and not again["problems"]
