"""Schema v4 (OpenCode 2 sessions) and the code that writes it list the same fields; older
versions are still read; a v4 document that breaks its schema is refused naming the field."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import orjson
import pytest
from fake_server import FakeOpenCode2
from scenarios import subagent_tree

from archiver.archive import serialise
from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.files import parse_archive
from archiver.redact import Redactor
from archiver.validate import ArchiveInvalid, check_archive
from archiver.versions import upgrade
from archiver.walk import walk_tree

ROOT = Path(__file__).resolve().parents[2]
V4 = json.loads((ROOT / "schemas" / "archive-v4.json").read_text())


def _v2_docs(oc2: FakeOpenCode2) -> list[dict[str, object]]:
    ids = subagent_tree(oc2)

    async def go() -> list[dict[str, object]]:
        async with httpx.AsyncClient() as http:
            tree = await walk_tree(OpenCodeClient(http, oc2.url, password=oc2.password), ids["root"])
        return build_documents(tree, archived_at="2026-12-01T00:00:00.000Z")

    return asyncio.run(go())


def test_schema_v4_and_code_list_the_same_fields(oc2: FakeOpenCode2) -> None:
    doc = orjson.loads(serialise(_v2_docs(oc2)[0], Redactor(b"0" * 32))[0])
    assert set(doc) == set(V4["required"])
    assert set(V4["properties"]) - set(doc) == {"upgraded_from"}
    assert set(doc["source"]) <= set(V4["properties"]["source"]["properties"])
    assert set(doc["execution"]) == set(V4["properties"]["execution"]["required"])
    assert (ROOT / "archiver" / "schemas" / "archive-v4.json").read_bytes() == (
        ROOT / "schemas" / "archive-v4.json"
    ).read_bytes(), "the packaged copy is the published schema"
    check_archive(doc)
    assert parse_archive(orjson.dumps(doc)) == doc, "a v4 document is read as it is"


def test_a_broken_v4_document_is_refused_naming_the_field(oc2: FakeOpenCode2) -> None:
    doc = orjson.loads(serialise(_v2_docs(oc2)[0], Redactor(b"0" * 32))[0])
    doc["execution"] = {"outcome": 3, "error": None, "message_id": None}
    with pytest.raises(ArchiveInvalid, match="execution"):
        check_archive(doc)
    doc["execution"] = None
    doc["messages"] = ["not an object"]
    with pytest.raises(ArchiveInvalid, match="messages"):
        check_archive(doc)


def test_older_versions_are_still_read_as_v3() -> None:
    v1 = json.loads((ROOT / "tests" / "archiver" / "fixtures" / "v1_session.json").read_text())
    assert upgrade(v1)["schema_version"] == 3
    with pytest.raises(ValueError, match="unknown archive schema version 5"):
        upgrade({"schema_version": 5})
