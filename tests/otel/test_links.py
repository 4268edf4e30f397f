"""A session's trace: the console's JSON twin and `octel sessions show` name it and link to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from otel_store import FIXTURES, archive
from pydantic import ValidationError
from typer.testing import CliRunner

from cli import app
from telemetry.otel_export.mapping import tree_spans
from telemetry.otel_export.sources import load_tree
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from web.app import create_app

PHOENIX = "http://127.0.0.1:6006/redirects/traces/{trace_id}"


def _cfg(tmp_path: Path, **kw: object) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None, **kw)  # type: ignore[call-arg]


def _spans(cfg: Settings, root: str) -> dict[str, tuple[str, str]]:
    """{session id: (trace id, span id of its invoke_agent)} as the exporter would send them."""
    engine = make_engine(cfg.db_url)
    with session_scope(engine, write=False) as db:
        spans = tree_spans(load_tree(db, cfg.archives, root).docs)
    engine.dispose()
    return {
        str(s.attributes["octel.session.id"]): (s.trace_hex, s.span_hex)
        for s in spans
        if s.name.startswith("invoke_agent")
    }


def test_the_session_page_links_to_the_trace_it_is_exported_as(tmp_path: Path) -> None:
    cfg = _cfg(
        tmp_path,
        otel_trace_url=PHOENIX + "?project={project}&s={session_id}&span={span_id}",
        otel_service_name="team a",
    )
    root = archive(cfg, "subagent_tree")
    child = json.loads((FIXTURES / "subagent_tree.json").read_text())["children"][root][0]
    exported = _spans(cfg, root)
    with TestClient(create_app(cfg)) as client:
        got = client.get(f"/api/sessions/{child}").json()["trace"]
    tid, sid = exported[child]
    assert got == {
        "trace_id": tid,
        "span_id": sid,
        "url": f"http://127.0.0.1:6006/redirects/traces/{tid}?project=team%20a&s={child}&span={sid}",
    }


def test_sessions_show_prints_the_trace_id_and_link(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    root = archive(cfg, "healthy")
    tid = _spans(cfg, root)[root][0]
    base = ["--data-dir", str(cfg.data_dir)]
    shown = CliRunner().invoke(app, [*base, "sessions", "show", root], catch_exceptions=False)
    assert shown.exit_code == 0 and tid in shown.stdout
    as_json = CliRunner().invoke(app, [*base, "sessions", "show", root, "--json"], catch_exceptions=False)
    assert json.loads(as_json.stdout)["trace"]["trace_id"] == tid
    assert json.loads(as_json.stdout)["trace"]["url"] is None
    env = {"OCTEL_OTEL_TRACE_URL": PHOENIX}
    linked = CliRunner().invoke(app, [*base, "sessions", "show", root], env=env, catch_exceptions=False)
    assert f"http://127.0.0.1:6006/redirects/traces/{tid}" in linked.stdout.replace("\n", "")


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("127.0.0.1:6006/{trace_id}", "http(s)"),
        ("http://x/traces", "{trace_id}"),
        ("http://x/{trace_id}/{org}", "org"),
        ("http://x/{trace_id", "template"),
    ],
)
def test_a_bad_trace_url_template_is_refused_naming_the_problem(template: str, why: str) -> None:
    with pytest.raises(ValidationError, match="otel_trace_url") as e:
        Settings(otel_trace_url=template, _env_file=None)  # type: ignore[call-arg]
    assert why in str(e.value)
