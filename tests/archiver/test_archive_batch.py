"""The bulk writer of an import: every file synced, renamed, read back and validated before
it counts; one file's failure stays with its own tree; the index records carry only redacted
text; no temporary file is left behind."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from archiver_fakes import recorded_permissions, recorded_status, tree_from_fixture

from archiver import batch
from archiver.archive import ArchiveResult
from archiver.batch import prepare, write_batch
from archiver.document import build_documents
from archiver.files import read_archive
from archiver.redact import Redactor

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"
AT = "2026-11-29T10:00:00.000Z"
SECRET = "configured-secret-value-1"
RED = Redactor(b"0" * 32, [SECRET])


def _docs(name: str) -> list[dict[str, Any]]:
    fx = orjson.loads((FIXTURES / f"{name}.json").read_bytes())
    return build_documents(
        tree_from_fixture(fx),
        archived_at=AT,
        label="nightly",
        status_history=recorded_status(fx),
        permission_events=recorded_permissions(fx),
    )


def test_a_batch_writes_reads_back_and_records_redacted_text(tmp_path: Path) -> None:
    docs = _docs("subagent_tree")
    docs[0] = copy.deepcopy(docs[0]) | {"title": f"deploy with {SECRET}"}
    result = ArchiveResult(docs[0]["root_session_id"], AT)
    write_batch([prepare(docs, RED, result)], tmp_path)
    assert not result.write_errors and len(result.files) == len(docs) == len(result.records)
    assert [read_archive(p)["session_id"] for p in result.files] == [d["session_id"] for d in docs]
    assert result.records[0].title is not None and SECRET not in result.records[0].title
    assert "[REDACTED:configured:" in result.records[0].title
    assert result.redaction.get("configured", 0) >= 1
    assert not list(tmp_path.glob(".tmp-*"))


def test_one_file_too_large_fails_its_own_tree_only(tmp_path: Path) -> None:
    small, large = _docs("healthy"), _docs("subagent_tree")
    large[0] = copy.deepcopy(large[0]) | {"title": "x" * 1_000_000}
    ok, bad = ArchiveResult(small[0]["root_session_id"], AT), ArchiveResult(large[0]["root_session_id"], AT)
    batch = [prepare(small, RED, ok), prepare(large, RED, bad)]
    limit = max(len(data) for _, data in batch[0].files)
    write_batch(batch, tmp_path, max_bytes=limit)
    assert not ok.write_errors and len(ok.files) == len(small)
    assert bad.write_errors and "more than the limit" in bad.write_errors[0]
    assert len(bad.files) + len(bad.write_errors) == len(large)
    assert sorted(tmp_path.iterdir()) == sorted(ok.files + bad.files)


def test_a_batch_larger_than_the_open_file_limit_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "_OPEN", 2)
    docs = _docs("subagent_tree")
    results = [ArchiveResult(f"r{i}", AT) for i in range(3)]
    write_batch([prepare(docs, RED, r) for r in results], tmp_path / "a")
    assert all(not r.write_errors and len(r.files) == len(docs) for r in results)
    assert not list((tmp_path / "a").glob(".tmp-*"))


def test_a_document_that_fails_its_check_is_never_written(tmp_path: Path) -> None:
    docs = _docs("subagent_tree")
    docs[0] = copy.deepcopy(docs[0]) | {"title": 5}
    result = ArchiveResult(docs[0]["root_session_id"], AT)
    prepared = prepare(docs, RED, result)
    write_batch([prepared], tmp_path)
    assert len(result.write_errors) == 1 and "failed its check" in result.write_errors[0]
    assert "title" in result.write_errors[0]
    assert len(result.files) == len(result.records) == len(docs) - 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in result.files)


def test_a_file_changed_on_disk_fails_its_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _docs("healthy")
    result = ArchiveResult(docs[0]["root_session_id"], AT)
    real = batch.read_plain
    monkeypatch.setattr(batch, "read_plain", lambda path, limit: real(path, limit) + b" ")
    write_batch([prepare(docs, RED, result)], tmp_path)
    assert not result.records and len(result.write_errors) == len(docs)
    assert all("differs from what was written" in e for e in result.write_errors)
