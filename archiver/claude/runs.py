"""The summary file Claude Code keeps of each ``Workflow`` run (pure: bytes in, a summary out).

When a run ends the CLI writes ``<sessionId>/workflows/<runId>.json`` beside the session's
folder of subagents: one JSON object with the run's id and task, when it started and how long it
took, its status (``completed``, ``failed``, ``killed``), the workflow's name and title, how many
agents it launched, the tokens and tool calls they used, its phases, the model it defaulted to,
its error or summary, and the script, arguments, logs, progress entries and result. The CLI's own
reader fills missing fields with defaults (status from ``error``, counts 0); this one does the
same, keeps the object whole under ``run`` and never counts anything from it: tokens and cost
come from the agents' transcripts only, so ``total_tokens`` is shown beside them, never added.

A file that is not a JSON object is reported (``malformed``) and skipped; one whose fields have
unexpected types keeps them in ``run`` with the normalised field left null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import orjson

from archiver.errors import WalkError
from archiver.shape import RawJson

__all__ = ["RunFile", "RunSummary", "read_runs"]


class RunSummary(TypedDict):
    """One Workflow run as the root's archive keeps it: its normalised fields, and the run's
    own file under ``run``."""

    run_id: str
    path: str
    workflow_name: str | None
    title: str | None
    status: str | None
    started: int | None
    duration_ms: int | None
    agent_count: int | None
    total_tokens: int | None
    total_tool_calls: int | None
    default_model: str | None
    error: str | None
    summary: str | None
    run: RawJson


_STATUSES = frozenset({"completed", "failed", "killed"})


@dataclass(frozen=True)
class RunFile:
    """One ``workflows/<runId>.json``: its name, the run id (its file name) and its bytes."""

    name: str
    run_id: str
    data: bytes


def _str(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 else None


def _started_ms(run: RawJson) -> int | None:
    start = _int(run.get("startTime"))
    if start is not None:
        return start
    from datetime import datetime

    stamp = _str(run.get("timestamp"))
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000) if stamp else None
    except ValueError:
        return None


def summary(run_id: str, name: str, run: RawJson) -> RunSummary:
    """The normalised fields of one run's file, with the object itself under ``run``."""
    status = _str(run.get("status"))
    if status not in _STATUSES:
        status = "failed" if run.get("error") else "completed" if status is None else status
    return {
        "run_id": _str(run.get("runId")) or run_id,
        "path": name,
        "workflow_name": _str(run.get("workflowName")),
        "title": _str(run.get("title")),
        "status": status,
        "started": _started_ms(run),
        "duration_ms": _int(run.get("durationMs")),
        "agent_count": _int(run.get("agentCount")),
        "total_tokens": _int(run.get("totalTokens")),
        "total_tool_calls": _int(run.get("totalToolCalls")),
        "default_model": _str(run.get("defaultModel")),
        "error": run.get("error") if isinstance(run.get("error"), str) else None,
        "summary": _str(run.get("summary")),
        "run": run,
    }


def read_runs(
    files: list[RunFile], session_id: str | None = None
) -> tuple[list[RunSummary], list[WalkError]]:
    """The summary of each run file, in run id order, and what could not be read."""
    out: list[RunSummary] = []
    errors: list[WalkError] = []
    for f in sorted(files, key=lambda f: f.run_id):
        try:
            run = orjson.loads(f.data)
        except orjson.JSONDecodeError as exc:
            errors.append(WalkError("malformed", "workflow_run", session_id, f"not JSON: {exc}", f.name))
            continue
        if not isinstance(run, dict):
            errors.append(WalkError("malformed", "workflow_run", session_id, "not a JSON object", f.name))
            continue
        out.append(summary(f.run_id, f.name, run))
    return out, errors
