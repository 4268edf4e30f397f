"""Export over OTLP/HTTP (protobuf): the CLI, retries, the background
queue, counters in /metrics. The receiver is a local OTLP/HTTP endpoint (tests/otel/otlp_receiver.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from otel_store import FIXTURES, archive
from otlp_receiver import OTLPReceiver
from typer.testing import CliRunner

from archiver.redact import Redactor
from cli import app
from telemetry.otel_export.background import BackgroundExporter
from telemetry.otel_export.export import TreeExporter
from telemetry.otel_export.mapping import tree_spans
from telemetry.otel_export.otlp_http import OTLPConfig, OTLPSender
from telemetry.otel_export.sources import load_tree
from telemetry.otel_export.spans import trace_id
from telemetry.services.ingest import ingest
from telemetry.settings import Settings
from telemetry.store.aggregates import read_all
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.timeutil import utcnow
from web.app import create_app


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as rx:
        yield rx


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch, receiver: OTLPReceiver) -> OTLPReceiver:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=octel-test")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    return receiver


@pytest.fixture
def cfg(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]


def octel(cfg: Settings, *args: str) -> Any:
    base = ["--data-dir", str(cfg.data_dir), "--database-url", cfg.db_url]
    return CliRunner().invoke(app, [*base, *args], catch_exceptions=False)


def counters(cfg: Settings) -> dict[str, float]:
    engine = make_engine(cfg.db_url)
    try:
        with session_scope(engine, write=False) as db:
            return {m: v for m, labels, v in read_all(db) if m.startswith("otel_")}
    finally:
        engine.dispose()


def test_cli_exports_a_tree_as_one_trace_and_again_as_the_same(cfg: Settings, otel_env: OTLPReceiver) -> None:
    root = archive(cfg, "subagent_tree", label="nightly")
    archive(cfg, "doom_loop", label="other")
    child = json.loads((FIXTURES / "subagent_tree.json").read_text())["children"][root][0]
    r = octel(cfg, "export", "otel", child, "--json")  # a subagent stands for its whole tree
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["trees"] == 1 and got["dropped"] == 0 and got["exported"] == got["spans"] > 0
    assert got["results"][0]["trace_id"] == f"{trace_id(root):032x}"
    assert got["endpoint"] == otel_env.endpoint + "/v1/traces"
    first = list(otel_env.spans)
    assert len(first) == got["spans"] and {s.trace_id for s in first} == {f"{trace_id(root):032x}"}
    assert first[0].resource["service.name"] == "octel" and otel_env.headers[0]["x-team"] == "octel-test"
    by_id = {s.span_id: s for s in first}
    nester = next(s for s in first if s.name == "invoke_agent nester")
    assert by_id[nester.parent_span_id].name == "execute_tool task"
    assert not any("input.value" in s.attributes for s in first), "content is opt-in"

    again = octel(cfg, "export", "otel", "--label", "nightly", "--json")
    assert again.exit_code == 0
    second = otel_env.spans[len(first) :]
    assert sorted((s.span_id, s.parent_span_id, s.start_ns, s.end_ns) for s in second) == sorted(
        (s.span_id, s.parent_span_id, s.start_ns, s.end_ns) for s in first
    )
    assert counters(cfg)["otel_spans_exported_total"] == 2 * got["spans"]

    before = otel_env.requests
    both = octel(cfg, "export", "otel", "--since", "1h", "--content", "--json")
    assert json.loads(both.stdout)["trees"] == 2
    assert otel_env.requests == before + 1, "small trees share a request"
    assert any("input.value" in s.attributes for s in otel_env.spans[2 * len(first) :])


def test_cli_refuses_bad_input_and_reports_a_dead_endpoint(
    cfg: Settings, monkeypatch: pytest.MonkeyPatch, receiver: OTLPReceiver
) -> None:
    archive(cfg, "healthy")
    nothing = octel(cfg, "export", "otel")
    assert nothing.exit_code == 2 and "--since or --label" in nothing.stderr
    unknown = octel(cfg, "export", "otel", "ses_nosuchsession")
    assert unknown.exit_code == 2 and "ses_nosuchsession" in unknown.stderr
    bad = octel(cfg, "export", "otel", "--since", "yesterday-ish")
    assert bad.exit_code == 2 and "--since" in bad.stderr
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    receiver.fail = 1000  # the backend answers 503 to everything
    down = octel(cfg, "export", "otel", "--since", "1h", "--json")
    assert down.exit_code == 1
    got = json.loads(down.stdout)
    assert got["exported"] == 0 and got["dropped"] == got["spans"] > 0
    assert "did not take" in got["results"][0]["error"]
    assert counters(cfg)["otel_spans_dropped_total"] == got["spans"]


def test_the_cycle_that_names_the_session_is_the_parent_span(cfg: Settings, otel_env: OTLPReceiver) -> None:
    engine = make_engine(cfg.db_url)
    upgrade(engine)
    run = json.loads((FIXTURES / "subagent_tree.json").read_text())
    with session_scope(engine) as db:
        ingest.finish_cycle(
            db,
            ingest.CycleFinish(
                cycle_id="cyc-7",
                driver="implement",
                terminal_state="done",
                worker_outcome="merged",
                session_id=run["root_id"],
                processed_count=1,
                started_at="2026-11-30T10:00:00Z",
                ended_at="2026-11-30T10:05:00Z",
            ),  # type: ignore[arg-type]
            utcnow(),
            redactor=Redactor(b"k" * 32),
        )
    archive(cfg, "subagent_tree", cycle_id="cyc-7")
    engine.dispose()
    assert octel(cfg, "export", "otel", run["root_id"]).exit_code == 0
    top = [s for s in otel_env.spans if not s.parent_span_id]
    assert [s.name for s in top] == ["dispatch_cycle implement"]
    assert top[0].attributes["octel.cycle.processed"] == 1
    assert top[0].attributes["octel.cycle.terminal_state"] == "done"


def test_background_export_retries_and_never_blocks_archiving(cfg: Settings, otel_env: OTLPReceiver) -> None:
    cfg = cfg.model_copy(update={"otel_queue_trees": 1})  # export off: only this exporter sends
    otel_env.release.clear()  # the backend takes requests but does not answer yet
    otel_env.fail = 1  # … and then answers the first one with 503
    bg = BackgroundExporter(
        cfg, sender=OTLPSender(OTLPConfig.from_env(timeout=5)), attempts=3, backoff_seconds=0.05
    )
    try:
        root = archive(cfg, "subagent_tree")  # archiving itself does not wait for the backend
        assert bg.submit(root)
        assert not bg.flush(timeout=0.3), "the thread is held by the backend"
        other = archive(cfg, "healthy")
        assert bg.submit(other)  # waits in the queue (one tree at most)
        assert not bg.submit(archive(cfg, "doom_loop")), "a full queue drops the tree"
        assert bg.submit(other), "a tree already waiting is not queued twice"
        otel_env.release.set()
        assert bg.flush(timeout=30)
    finally:
        bg.close()
    engine = make_engine(cfg.db_url)
    with session_scope(engine, write=False) as db:
        want = sum(len(tree_spans(load_tree(db, cfg.archives, r).docs)) for r in (root, other))
    engine.dispose()
    assert bg.exported == want and bg.dropped == 0 and bg.trees_dropped == 1
    assert len({(s.trace_id, s.span_id) for s in otel_env.spans}) == want
    c = counters(cfg)
    assert c["otel_spans_exported_total"] == want and c["otel_trees_dropped_total"] == 1


def test_archiving_with_export_on_queues_the_tree_and_metrics_count_it(
    cfg: Settings, otel_env: OTLPReceiver
) -> None:
    from telemetry.otel_export import background

    cfg = cfg.model_copy(update={"otel_export": True})
    root = archive(cfg, "subagent_tree")
    bg = background.background_for(cfg)
    assert bg is not None and bg.flush(timeout=30)
    assert {s.trace_id for s in otel_env.spans} == {f"{trace_id(root):032x}"}
    with TestClient(create_app(cfg)) as client:
        text = client.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("octel_otel_spans_exported_total"))
    assert float(line.split()[-1]) == len(otel_env.spans)
    bg.close()
    with background._shared_lock:
        background._shared.clear()


def test_one_stuck_backend_holds_no_caller(cfg: Settings, otel_env: OTLPReceiver) -> None:
    otel_env.release.clear()
    bg = BackgroundExporter(cfg, sender=OTLPSender(OTLPConfig.from_env(timeout=1)), attempts=1)
    root = archive(cfg, "healthy")
    done = threading.Event()

    def many() -> None:
        for _ in range(50):
            bg.submit(root)
        done.set()

    threading.Thread(target=many).start()
    assert done.wait(timeout=30), "submit returns while the backend hangs"
    otel_env.release.set()
    bg.close(timeout=10)


def test_tree_exporter_reports_a_missing_archive(cfg: Settings, otel_env: OTLPReceiver) -> None:
    root = archive(cfg, "healthy")
    for p in cfg.archives.rglob("*.json*"):
        p.unlink()
    engine = make_engine(cfg.db_url)
    try:
        got = TreeExporter(cfg, engine).export_root(root)
    finally:
        engine.dispose()
    assert got.error == "no readable archive of this tree" and "not there" in got.problems[0]
    assert otel_env.requests == 0


def test_import_archives_queues_each_tree_when_export_is_on(
    tmp_path: Path, cfg: Settings, otel_env: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from telemetry.otel_export import background

    root = archive(cfg, "subagent_tree")  # export off: files only
    fresh = Settings(data_dir=tmp_path / "fresh", _env_file=None)  # type: ignore[call-arg]
    monkeypatch.setenv("OCTEL_OTEL_EXPORT", "true")
    r = octel(fresh, "import", "archives", str(cfg.archives), "--json")
    assert r.exit_code == 0, r.output
    with background._shared_lock:
        exporters = list(background._shared.values())
        background._shared.clear()
    assert len(exporters) == 1 and exporters[0].flush(timeout=30)
    exporters[0].close()
    assert {s.trace_id for s in otel_env.spans} == {f"{trace_id(root):032x}"}
    assert any(s.name == "invoke_agent nester" for s in otel_env.spans)
