"""The one archive-path rule: a stored relative path never leads out of the archive folder."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from telemetry.queries.turns import archive_location, open_archive

_PART = st.sampled_from(["..", ".", "a", "b", "link", "out", "x.json", ""])


def _layout(tmp: Path) -> Path:
    root = tmp / "archives"
    (root / "a" / "b").mkdir(parents=True, exist_ok=True)
    (tmp / "elsewhere").mkdir(exist_ok=True)
    (tmp / "elsewhere" / "x.json").write_bytes(b"{}")
    (root / "a" / "x.json").write_bytes(b"{}")
    link = root / "a" / "link"
    if not link.is_symlink():
        os.symlink(tmp / "elsewhere", link)  # a symlink that leaves the folder
    out = root / "out"
    if not out.is_symlink():
        os.symlink(root / "a", out)  # one that stays inside
    return root


@settings(max_examples=300)
@given(parts=st.lists(_PART, min_size=1, max_size=6))
def test_a_relative_path_stays_inside_after_resolving(tmp_path_factory: object, parts: list[str]) -> None:
    tmp = Path(str(tmp_path_factory.getbasetemp())) / "archive-location"
    tmp.mkdir(exist_ok=True)
    root = _layout(tmp)
    rel = "/".join(parts).lstrip("/")  # relative, as the archiver stores its own files
    found = archive_location(root, rel)
    assert found is None or found.is_relative_to(root.resolve())
    if found is None:
        doc, error = open_archive(root, rel)
        assert doc is None and error is not None and "outside the archive folder" in error


def test_inside_outside_and_missing(tmp_path: Path) -> None:
    root = _layout(tmp_path)
    assert archive_location(root, "a/x.json") == (root / "a" / "x.json").resolve()
    assert archive_location(root, "out/x.json") == (root / "a" / "x.json").resolve()
    assert archive_location(root, "a/link/x.json") is None
    assert archive_location(root, "../elsewhere/x.json") is None
    assert open_archive(root, "a/gone.json")[1] == "archive file a/gone.json is not there (pruned or moved?)"
    (root / "a" / "doc.json").write_bytes(
        orjson.dumps({"schema_version": 2, "session_id": "s", "messages": []})
    )
    doc, error = open_archive(root, "a/doc.json")
    assert error is None and doc is not None and doc["session_id"] == "s"
    (root / "a" / "bad.json").write_bytes(b"{not json")
    doc, error = open_archive(root, "a/bad.json")
    assert doc is None and error is not None and error.startswith("cannot read archive a/bad.json")
