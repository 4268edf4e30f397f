"""`octel detect` on OpenCode 2 files: an export from the V2 export route, a V2 `opencode run
--format json` log (V1-shaped lines with V2's tool names) and captures of `/api/event`."""

from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

import httpx
from fake_server import FakeOpenCode2
from scenarios import doom_loop
from typer.testing import CliRunner

from cli import app


def _detect(tmp_path: Path, file: Path) -> dict[str, Any]:
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    res = runner.invoke(app, ["--data-dir", str(tmp_path / "data"), "detect", str(file), "--json"])
    assert res.exit_code in (0, 1), res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _stuck(out: dict[str, Any]) -> set[str]:
    results = out.get("results") or [out]
    return {f["detector"] for r in results for f in r["findings"] if f["verdict"] == "stuck"}


def test_a_v2_export_is_scored(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    sid = doom_loop(oc2)
    got = httpx.get(f"{oc2.url}/api/experimental/session/{sid}/export", auth=("opencode", oc2.password))
    assert got.status_code == 200 and set(got.json()["data"]) == {"info", "messages"}
    file = tmp_path / "export.json"
    file.write_bytes(got.content)
    assert "doom_loop" in _stuck(_detect(tmp_path, file))


def _run_log(sid: str, repeats: int) -> str:
    # ASSUMED (the contract describes the lines, no capture shows them): parts name no
    # messageID, so a step runs from its step_start line to its step_finish line
    lines: list[dict[str, Any]] = []
    for n in range(repeats):
        ts = 1_760_000_000_000 + n * 1000
        state = {
            "status": "completed",
            "input": {"command": "pytest -x"},
            "output": "FAILED test_add",
            "title": "pytest -x",
            "metadata": {"exit": 1},
            "time": {"start": ts, "end": ts + 5},
        }
        lines += [
            {
                "type": "step_start",
                "timestamp": ts,
                "sessionID": sid,
                "part": {"id": f"prt_{n}a", "type": "step-start"},
            },
            {
                "type": "tool_use",
                "timestamp": ts + 1,
                "sessionID": sid,
                "part": {
                    "id": f"prt_{n}b",
                    "type": "tool",
                    "tool": "shell",
                    "callID": f"call_{n}",
                    "state": state,
                },
            },
            {
                "type": "step_finish",
                "timestamp": ts + 2,
                "sessionID": sid,
                "part": {
                    "id": f"prt_{n}c",
                    "type": "step-finish",
                    "reason": "tool-calls",
                    "cost": 0.001,
                    "tokens": {"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                },
            },
        ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def test_a_v2_run_log_is_scored(tmp_path: Path) -> None:
    file = tmp_path / "run.jsonl"
    file.write_text(_run_log("ses_0999999999999Fk", 8))
    assert "doom_loop" in _stuck(_detect(tmp_path, file))


def test_a_v2_event_capture_is_scored(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    frames: queue.Queue[Any] = queue.Queue()
    oc2._subs.append(frames)  # what `curl /api/event` saved while the loop ran
    doom_loop(oc2)
    lines = []
    while not frames.empty():
        lines.append(json.dumps(frames.get()))
    file = tmp_path / "events.jsonl"
    file.write_text("\n".join(lines) + "\n")
    assert "doom_loop" in _stuck(_detect(tmp_path, file))


def test_a_published_v2_capture_is_read(tmp_path: Path) -> None:
    file = Path(__file__).parent / "fixtures" / "events-basic-2.0.15.json"
    out = _detect(tmp_path, file)
    assert (out["messages"], out["verdict"]) == (2, "healthy"), out  # the prompt and its one step
