"""End to end: a real opencode serve runs a two-level subagent tree; octel archives it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import orjson
import pytest
from driver import run_prompt
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select
from store_templates import migrate_by_copy

from archiver.archive import ArchiveResult, archive_tree
from archiver.client import OpenCodeClient
from archiver.files import find_archives, read_archive
from archiver.redact import Redactor
from telemetry.archive_store import archive_store
from telemetry.archiving import archive_session_tree
from telemetry.queries.session_detail import session_detail
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.opencode

SECRET = "octel-e2e-configured-value-7f3a9c"
TOKEN = "ghp_E2EfakeFAKEfakeFAKEfakeFAKEfake5678"

SCRIPT = {
    "title": "Investigate with subagents",
    "turns": [
        {
            "text": "Delegating.",
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "description": "Explore level one",
                        "subagent_type": "nester",
                        "prompt": "Explore the repo and delegate the README check.",
                    },
                }
            ],
        },
        # a secret in a tool input, and (echoed) in its output
        {
            "text": "Child here.",
            "tool_calls": [
                {"name": "bash", "arguments": {"command": f"echo {SECRET} && echo token={TOKEN}"}}
            ],
        },
        {
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "description": "Check the README",
                        "prompt": "Read README.md and report.",
                        "subagent_type": "general",
                    },
                }
            ]
        },
        {"tool_calls": [{"name": "read", "arguments": {"filePath": "{dir}/README.md"}}]},
        {"text": "Grandchild: README says it is a tiny demo repo."},
        {"text": "Child: explored; README checked by my subagent."},
        {"text": "Root: the subagents finished."},
    ],
}


def _archive(url: str, root: str, out: Path, **kw: object) -> ArchiveResult:
    async def go() -> ArchiveResult:
        async with httpx.AsyncClient(timeout=15.0) as http:
            # a tiny page size drives the real server's cursor paging
            client = OpenCodeClient(http, url, page_size=2)
            return await archive_tree(client, root, out, Redactor(b"k" * 32, [SECRET]), **kw)

    return asyncio.run(go())


def test_archive_of_a_two_level_subagent_tree(opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path) -> None:
    script = orjson.loads(orjson.dumps(SCRIPT).replace(b"{dir}", str(opencode.project).encode()))
    fake_llm.load(script)
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        run = run_prompt(http, f"Investigate the project using subagents; my key is {SECRET}.")
        root = run["root"]
        expected = {sid: http.get(f"/session/{sid}").json() for sid in run["ids"]}
        counts = {sid: len(http.get(f"/session/{sid}/message").json()) for sid in run["ids"]}
    assert len(expected) == 3, "the scripted run makes a root, a child and a grandchild"

    result = _archive(opencode.url, root, tmp_path, label="e2e")
    assert result.walk_errors == [] and result.write_errors == [] and result.complete
    docs = {d["session_id"]: d for d in map(read_archive, find_archives(tmp_path))}
    assert set(docs) == set(expected)
    for sid, rec in expected.items():
        doc = docs[sid]
        assert doc["parent_session_id"] == rec.get("parentID")
        assert len(doc["messages"]) == counts[sid] > 0
        assert doc["source"]["messages_route"] == "classic"
        assert doc["source"]["opencode_version"] == "1.18.33"
    depth = {sid: d["depth"] for sid, d in docs.items()}
    assert sorted(depth.values()) == [0, 1, 2]
    child = next(d for d in docs.values() if d["depth"] == 1)
    assert child["agent"] == "nester" and child["subagent_title"] == "Explore level one"
    assert docs[root]["subtree"]["sessions"] == 3
    assert docs[root]["subtree"]["cost"] == pytest.approx(sum(r["cost"] for r in expected.values()))

    raw = b"".join(p.read_bytes() for p in find_archives(tmp_path))
    assert SECRET.encode() not in raw and TOKEN.encode() not in raw
    assert result.redaction.get("configured", 0) >= 3 and result.redaction.get("github", 0) >= 1
    bash = [p for m in child["messages"] for p in m["parts"] if p["type"] == "tool" and p["tool"] == "bash"]
    assert bash and "[REDACTED:configured:" in bash[0]["state"]["input"]["command"]
    assert "[REDACTED:configured:" in bash[0]["state"]["output"]

    # archiving again replaces files, and delete-after removes the whole tree on the server
    again = _archive(opencode.url, root, tmp_path, label="e2e", delete_after=True)
    assert again.complete and again.deleted
    assert len(find_archives(tmp_path)) == 3
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        assert all(http.get(f"/session/{sid}").status_code == 404 for sid in expected)


@pytest.mark.parametrize(
    "store_url", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_real_tree_archived_into_the_database_store(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path, store_url: str
) -> None:
    """`OCTEL_ARCHIVE_STORE=database`: the real tree lands in rows beside its index rows, no
    file is written, secrets are gone, and the tree is deleted only after the read-back."""
    script = orjson.loads(orjson.dumps(SCRIPT).replace(b"{dir}", str(opencode.project).encode()))
    fake_llm.load(script)
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        run = run_prompt(http, f"Investigate the project using subagents; my key is {SECRET}.")
    settings = Settings(
        data_dir=tmp_path / "data", database_url=store_url, archive_store="database", _env_file=None
    )  # type: ignore[call-arg]
    migrate_by_copy(store_url)  # a copy of the migrated template: `upgrade` finds it at head
    engine = make_engine(store_url)
    upgrade(engine)
    try:
        outcome = archive_session_tree(
            run["root"],
            settings=settings,
            engine=engine,
            server_url=opencode.url,
            secret_values=[SECRET],
            delete_after=True,
        )
        assert outcome.ok and outcome.result is not None and outcome.result.deleted, outcome.to_dict()
        assert not settings.archives.exists() or find_archives(settings.archives) == []
        store = archive_store(settings, engine)
        with session_scope(engine, write=False) as db:
            rows = {r.session_id: r.archive_path for r in db.exec(select(SessionIndex))}
            assert set(rows) == set(run["ids"])
            for sid, name in rows.items():
                plain = store.read(name)
                assert SECRET.encode() not in plain and TOKEN.encode() not in plain
                detail = session_detail(db, sid, store)
                assert detail is not None and detail.archive.available and detail.per_turn
    finally:
        engine.dispose()
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        assert all(http.get(f"/session/{sid}").status_code == 404 for sid in run["ids"])
