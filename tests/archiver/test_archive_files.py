"""Archive documents, files and schema: written atomically, read back equal, schema in step."""

from __future__ import annotations

import errno
import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from archiver_fakes import recorded_permissions, recorded_status, tree_from_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver import files
from archiver.archive import ArchiveResult, remove_superseded, serialise, write_documents
from archiver.document import build_documents, parse_agent
from archiver.errors import ERROR_KINDS, ArchiveWriteError
from archiver.files import archive_name, find_archives, read_archive, write_atomic
from archiver.metrics import per_turn, totals
from archiver.redact import Redactor

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "archive-v3.json").read_text())
SCHEMA_V2 = json.loads((ROOT / "schemas" / "archive-v2.json").read_text())
FIXTURES = ROOT / "tests" / "fixtures" / "opencode"
KEY = b"0" * 32
AT = "2026-11-29T10:00:00.000Z"


def _fx(name: str) -> Any:
    return orjson.loads((FIXTURES / f"{name}.json").read_bytes())


def _docs(name: str, label: str | None = "nightly") -> list[dict[str, Any]]:
    fx = _fx(name)
    return build_documents(
        tree_from_fixture(fx),
        archived_at=AT,
        label=label,
        status_history=recorded_status(fx),
        permission_events=recorded_permissions(fx),
    )


def _write(docs: list[dict[str, Any]], folder: Path, **kw: Any) -> ArchiveResult:
    result = ArchiveResult(docs[0]["root_session_id"], AT)
    write_documents(docs, folder, Redactor(KEY), result, **kw)
    return result


@pytest.mark.parametrize(
    "name",
    [
        "healthy",
        "subagent_tree",
        "secrets",
        "permission_deadlock",
        "doom_loop",
        "retry_cascade",
        "context_overflow",
    ],
)
def test_written_archives_match_the_schema(name: str, tmp_path: Path) -> None:
    result = _write(_docs(name), tmp_path)
    assert result.files and not result.write_errors
    for path in result.files:
        doc = orjson.loads(path.read_bytes())
        jsonschema.validate(doc, SCHEMA)
        assert read_archive(path) == doc


def test_schema_and_code_list_the_same_fields(tmp_path: Path) -> None:
    doc = orjson.loads(serialise(_docs("healthy")[0], Redactor(KEY))[0])
    assert set(doc) == set(SCHEMA["required"])
    assert set(SCHEMA["properties"]) - set(doc) == {"upgraded_from"}
    defs = SCHEMA["$defs"]
    # an OpenCode turn says what priced it; archives written before it are still valid
    assert set(doc["per_turn"][0]) == set(defs["turn"]["required"]) | {"cost_source"}
    assert set(defs["turn"]["properties"]) == set(doc["per_turn"][0])
    assert set(doc["totals"]) == set(defs["totals"]["required"])
    assert set(doc["subtree"]) == set(defs["subtree"]["required"])
    assert set(defs["walk_error"]["properties"]["error_kind"]["enum"]) == set(ERROR_KINDS)


def test_tree_fields_and_file_names(tmp_path: Path) -> None:
    fx = _fx("subagent_tree")
    result = _write(_docs("subagent_tree"), tmp_path)
    names = [p.name for p in find_archives(tmp_path)]
    assert [n.split("__")[1] for n in names] == ["sub0", "sub1", "sub2"]
    assert [n.split("__")[3] for n in names] == ["build", "nester", "general"]
    assert all(n.startswith("20261129T100000Z__") and "__nightly__" in n for n in names)
    docs = [read_archive(p) for p in find_archives(tmp_path)]
    assert [d["depth"] for d in docs] == [0, 1, 2]
    assert docs[1]["parent_session_id"] == docs[0]["session_id"] == fx["root_id"]
    assert docs[2]["parent_session_id"] == docs[1]["session_id"]
    assert docs[2]["subagent_title"] == "Check the README"
    assert docs[0]["subtree"]["sessions"] == 3
    assert docs[0]["subtree"]["cost"] == pytest.approx(sum(s["cost"] for s in fx["sessions"]))
    rec = {r.session_id: r for r in result.records}[fx["root_id"]]
    assert rec.subtree_session_count == 3 and rec.archive_path == names[0]
    assert rec.content_hash.startswith("sha256:") and rec.message_count == 3


def test_findings_are_in_the_archive() -> None:
    docs = _docs("permission_deadlock")
    assert docs[0]["findings"], "the deadlock fixture is not healthy"
    assert docs[0]["verdict"] in ("suspect", "stuck")
    assert {f["detector"] for f in docs[0]["findings"]}


def test_secrets_never_reach_the_disk(tmp_path: Path) -> None:
    result = _write(_docs("secrets"), tmp_path, compress=True)
    raw = b"".join(gzip.decompress(p.read_bytes()) for p in result.files)
    for s in (
        b"ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
        b"AKIAFAKEFAKEFAKEFAKE1",
        b"sk-proj-FAKE0123456789",
        b"hunter2-fake@",
        b"MIIEfake",
    ):
        assert s not in raw
    doc = read_archive(result.files[0])
    assert doc["redaction"] == result.redaction and sum(doc["redaction"].values()) > 5
    assert result.files[0].name.endswith(".json.gz")


def test_secrets_never_reach_a_file_name_or_an_index_record(tmp_path: Path) -> None:
    gh = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ant = "sk-ant-api03-" + "abcdefghijklmnopqrstuv"
    docs = _docs("subagent_tree", label=f"nightly-{ant}")
    kid = docs[-1]
    kid["agent"], kid["title"] = gh, f"check (@{gh} subagent)"
    kid["session"] = {**kid["session"], "directory": f"/home/x/{gh}"}
    kid["per_turn"] = [*kid["per_turn"], {**kid["per_turn"][-1], "error": "APIError password=hunter2hunter2"}]
    kid["findings"] = [
        {
            "detector": "doom_loop",
            "verdict": "suspect",
            "score": 0.5,
            "start_index": 0,
            "evidence": {"sig": gh},
        }
    ]
    result = _write(docs, tmp_path)
    assert len(result.files) == len(docs)
    names = " ".join(p.name for p in find_archives(tmp_path))
    records = repr(result.records)
    for secret in (gh, ant, "hunter2hunter2", gh[:20], ant[:20]):
        assert secret not in names and secret not in records
    rec = result.records[-1]
    assert rec.agent is not None and rec.agent.startswith("[REDACTED:github:")
    assert rec.error_kind is not None and rec.error_kind.startswith("APIError password=[REDACTED:assignment:")
    assert rec.findings[0]["evidence"]["sig"].startswith("[REDACTED:github:")
    assert rec.archive_path in names and "REDACTED-github-" in rec.archive_path


def test_rearchive_replaces_the_older_file(tmp_path: Path) -> None:
    docs = _docs("healthy")
    _write(docs, tmp_path)
    later = [{**d, "archived_at": "2026-11-30T10:00:00.000Z"} for d in docs]
    result = _write(later, tmp_path)
    # the older file stays until the caller has indexed the new one, then goes
    assert len(find_archives(tmp_path)) == 2 and [n[:9] for n in result.superseded] == ["20261129T"]
    remove_superseded(result)
    names = [p.name for p in find_archives(tmp_path)]
    assert len(names) == 1 and names[0].startswith("20261130T")


def test_v1_archives_are_read_as_the_newest() -> None:
    doc = read_archive(Path(__file__).parent / "fixtures" / "v1_session.json")
    jsonschema.validate(doc, SCHEMA)
    assert doc["upgraded_from"] == 1 and doc["depth"] == 0
    assert doc["root_session_id"] == doc["session_id"]
    assert doc["status_history"][0]["type"] == "busy"
    assert doc["totals"]["turns"] == len(doc["per_turn"]) > 0


def test_unknown_version_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_bytes(b'{"schema_version": 99}')
    with pytest.raises(ValueError, match="unknown archive schema version"):
        read_archive(p)


def test_parse_agent() -> None:
    assert parse_agent("Explore level one (@nester subagent)") == ("nester", "Explore level one")
    assert parse_agent("Plain title", "build") == ("build", None)
    assert parse_agent(None) == (None, None)


@settings(max_examples=500)
@given(st.text(max_size=30), st.integers(0, 5), st.text(max_size=30), st.text(max_size=30))
def test_names_are_safe(label: str, depth: int, agent: str, sid: str) -> None:
    name = archive_name(AT, depth, label, agent, sid)
    assert "/" not in name and "\x00" not in name and not name.startswith(".")
    assert name.count("__") == 4 and name.endswith(".json") and len(name) < 400
    assert len(name.removesuffix(".json").split("__")) == 5


def test_disk_full_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    target = tmp_path / "a.json"
    with pytest.raises(ArchiveWriteError, match="No space left on device"):
        write_atomic(target, b"{}")
    assert list(tmp_path.iterdir()) == []


def test_permission_denied_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tests may run as root, which ignores folder modes: refuse the way the kernel would
    def denied(**kw: Any) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(files.tempfile, "mkstemp", denied)
    with pytest.raises(ArchiveWriteError, match="Permission denied") as info:
        write_atomic(tmp_path / "a.json", b"{}")
    assert str(info.value) == f"cannot write archive {tmp_path / 'a.json'}: Permission denied"
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _write(_docs("healthy"), blocker / "sub")
    assert result.files == [] and result.write_errors and not result.complete
    assert "cannot write archive" in result.write_errors[0]


def test_replace_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.json"
    write_atomic(target, b'{"old": 1}')

    def boom(src: str, dst: str) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(files.os, "replace", boom)
    with pytest.raises(ArchiveWriteError):
        write_atomic(target, b'{"new": 1}')
    assert target.read_bytes() == b'{"old": 1}' and [p.name for p in tmp_path.iterdir()] == ["a.json"]


@pytest.mark.parametrize("error", [MemoryError, KeyboardInterrupt])
def test_any_interruption_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    def interrupted(fd: int) -> None:
        raise error()

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(error):
        write_atomic(tmp_path / "a.json", b"{}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda gz: gz[: len(gz) // 2],  # truncated: gzip raises EOFError
        lambda gz: gz[:10] + b"\xff" * (len(gz) - 10),  # corrupt deflate data: zlib.error
        lambda gz: gz[:3] + b"\xff" + gz[4:],  # bad header flags
    ],
)
def test_damaged_gzip_is_a_read_error(tmp_path: Path, damage: Any) -> None:
    p = tmp_path / "x.json.gz"
    p.write_bytes(damage(gzip.compress(orjson.dumps({"schema_version": 2, "pad": "x" * 500}))))
    with pytest.raises(ValueError, match=r"x\.json\.gz"):
        read_archive(p)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=25,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_json, st.booleans())
def test_round_trip(tmp_path: Path, payload: Any, compress: bool) -> None:
    msgs = [
        {
            "info": {"id": "msg_1", "sessionID": "ses_x", "role": "user", "time": {"created": 1}},
            "parts": [{"type": "text", "text": "hi"}],
        }
    ]
    doc = {
        "schema_version": 3,
        "archived_at": AT,
        "depth": 0,
        "session_id": "ses_x",
        "label": None,
        "agent": None,
        "messages": msgs,
        "session": {"x": payload},
        "per_turn": per_turn(msgs),
        "totals": totals(msgs, per_turn(msgs)),
    }
    data, counts = serialise(doc, Redactor(KEY, rules=False))
    path = tmp_path / archive_name(AT, 0, None, None, "ses_x", compress=compress)
    write_atomic(path, data, compress=compress)
    assert read_archive(path) == {**doc, "redaction": counts} and counts == {}
