"""The OTLP/HTTP receiver: Claude Code's metrics and events, JSON and protobuf, into runs per
session; and the real CLI exporting to a live octel."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from claude_cli import run_claude
from claude_lines import FIXTURES
from fake_api import Answer, fake_anthropic
from fastapi.testclient import TestClient
from google.protobuf.json_format import ParseDict
from liveserver import live_octel
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from sqlmodel import select

from telemetry.settings import Settings
from telemetry.store.aggregates import read_all
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import AgentRun
from web.app import create_app
from web.app_state import app_state

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _exports(run: str = "g_otel") -> list[dict[str, Any]]:
    lines = (FIXTURES / run / "json.otel.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", ingest_token=TOKEN, _env_file=None)  # type: ignore[arg-type,call-arg]
    with TestClient(create_app(settings)) as c:
        yield c


def _runs(client: TestClient) -> list[AgentRun]:
    with session_scope(app_state(client.app).engine) as db:
        rows = list(db.exec(select(AgentRun)).all())
        db.expunge_all()
        return rows


def _post_all(client: TestClient, protobuf: bool = False) -> None:
    for e in _exports():
        signal = e["path"].rsplit("/", 1)[-1]
        if protobuf:
            cls = ExportMetricsServiceRequest if signal == "metrics" else ExportLogsServiceRequest
            body = ParseDict(e["body"], cls()).SerializeToString()
            r = client.post(
                e["path"], content=body, headers={**AUTH, "Content-Type": "application/x-protobuf"}
            )
        else:
            r = client.post(e["path"], json=e["body"], headers=AUTH)
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
def test_metrics_and_events_become_one_run_per_session(client: TestClient, protobuf: bool) -> None:
    _post_all(client, protobuf)
    (run,) = _runs(client)
    assert run.run_key == "otel:68362e2b-ca3b-420f-91ed-82647286d286" and run.session_id in run.run_key
    assert run.cost_usd == pytest.approx(0.103164) and run.num_turns == 2  # the CLI's own total
    assert (run.input_tokens, run.output_tokens) == (12561 + 12685, 83 + 26)
    assert run.model == "claude-opus-5-5" and not run.is_error
    assert run.raw is not None and run.raw["events"]["tool_result"] == 1
    _post_all(client, protobuf)  # an exporter retrying the same batches
    (again,) = _runs(client)
    assert again.cost_usd == run.cost_usd and again.num_turns == 2
    with session_scope(app_state(client.app).engine, write=False) as db:
        runs = [(labels, v) for m, labels, v in read_all(db) if m == "agent_runs_total"]
    assert runs == [({"agent": "claude-code", "model": "claude-opus-5-5", "outcome": "success"}, 1.0)]


def test_api_errors_and_failed_tools_are_kept(client: TestClient) -> None:
    def record(name: str, seq: int, **attrs: Any) -> dict[str, Any]:
        kv = {"session.id": "s-err", "event.name": name, "event.sequence": seq, **attrs}
        return {
            "attributes": [
                {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}}
                for k, v in kv.items()
            ]
        }

    logs = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            record("tool_result", 1, tool_name="Bash", success="false", tool_use_id="t1"),
                            record("api_error", 2, status_code=529, error="Overloaded", request_id="r1"),
                        ]
                    }
                ]
            }
        ]
    }
    assert client.post("/v1/logs", json=logs, headers=AUTH).status_code == 200
    (run,) = _runs(client)
    assert run.is_error and run.raw is not None and run.raw["tool_failures"] == 1
    assert run.raw["errors"] == ["529 Overloaded"]


def test_the_ingest_token_is_required(client: TestClient) -> None:
    r = client.post("/v1/metrics", json={"resourceMetrics": []})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("body", "ctype", "field"),
    [
        (b"not json", "application/json", "body"),
        (b"[1]", "application/json", "body"),
        (b'{"resourceMetrics": 5}', "application/json", "resourceMetrics"),
        (b"\xff\xff\xff", "application/x-protobuf", "body"),
    ],
)
def test_bad_bodies_are_a_4xx_naming_the_field(
    client: TestClient, body: bytes, ctype: str, field: str
) -> None:
    r = client.post("/v1/metrics", content=body, headers={**AUTH, "Content-Type": ctype})
    assert r.status_code == 400, r.text
    assert field in r.text and not _runs(client)


@pytest.mark.claude
def test_the_real_cli_exports_to_octel(tmp_path: Path) -> None:
    """What a fleet sets (docs/claude.md): the CLI's costs reach octel with no wrapper."""
    data = tmp_path / "data"
    data.mkdir()
    with live_octel(data, token=TOKEN) as octel, fake_anthropic([Answer("Hello.", output_tokens=40)]) as fake:
        env = {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": octel,
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {TOKEN}",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            "OTEL_LOGS_EXPORT_INTERVAL": "500",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        run = run_claude(tmp_path / "run", fake.url, "-p", "hi", "--output-format", "json", env=env)
        assert run.exit_code == 0, run.stderr
        result = json.loads(run.stdout)
        engine = make_engine(f"sqlite:///{data / 'octel.db'}")
        try:
            with session_scope(engine) as db:
                row = db.exec(
                    select(AgentRun).where(AgentRun.run_key == f"otel:{result['session_id']}")
                ).one()
                assert row.cost_usd == pytest.approx(result["total_cost_usd"])
                assert row.output_tokens == 40
        finally:
            engine.dispose()
        assert httpx.get(f"{octel}/api/health", timeout=5).status_code == 200
