"""Runs of Claude Code's ``Workflow`` tool (pure: journal bytes in, what the run did out).

A workflow script launches agents with ``agent()``; the CLI keeps one run in a folder under the
session's ``subagents/`` (``subagents/workflows/<runId>/``, other versions nest it deeper): an
``agent-<id>.jsonl`` transcript and meta file per agent (``agentType: "workflow-subagent"``, no
``toolUseId``) and ``journal.jsonl``, the run's ledger. Journal lines, as 2.1.328 writes them:

- ``launched`` (optionally ``hiddenScriptSha256``): the script began;
- ``started`` ``{key, agentId, [label], [phase], [remoteSessionId]}``: one ``agent()`` call ran;
- ``result`` ``{key, agentId, result, [toolsUsed], [sessionId]}``: its return value (``cached``
  when a resumed run replayed it instead of running it again);
- ``failed`` ``{key, agentId}``: the call failed (``agentId`` may be empty).

``key`` is the call's content hash (``v2:<sha256>``): a respawned agent keeps the key under a new
``agentId``. The journal holds no conversation and no usage: tokens and cost come from the agents'
own transcripts only, so reading the journal can never count anything twice. What it adds is
which agents the run launched (also those whose transcript is missing), their label and phase,
how each ended and what it returned. The run hangs under the ``Workflow`` call whose tool result
names its ``runId``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver.claude.lines import read_lines
from archiver.claude.model import ClaudeSession, ClaudeTree, JsonObj, RunAgentDoc
from archiver.errors import WalkError

__all__ = ["JournalFile", "RunAgent", "WorkflowRun", "attach_runs", "read_journal"]

_KINDS = frozenset({"launched", "started", "result", "failed"})


@dataclass(frozen=True)
class JournalFile:
    """One run's ``journal.jsonl``: its name, the run id (its folder's name) and its bytes."""

    name: str
    run_id: str
    data: bytes


@dataclass
class RunAgent:
    """One ``agent()`` call of a run, as the journal tells it."""

    agent_id: str
    key: str | None = None
    label: str | None = None
    phase: str | None = None
    # started (no result yet: running, interrupted or killed), done, cached, failed
    status: str = "started"
    result: Any = None

    def to_dict(self, run_id: str) -> RunAgentDoc:
        return {
            "run_id": run_id,
            "key": self.key,
            "label": self.label,
            "phase": self.phase,
            "status": self.status,
            "result": self.result,
        }


@dataclass
class WorkflowRun:
    run_id: str
    name: str
    launched: bool = False
    agents: dict[str, RunAgent] = field(default_factory=dict)
    errors: list[WalkError] = field(default_factory=list)
    unknown_types: dict[str, int] = field(default_factory=dict)


def _s(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _agent(run: WorkflowRun, line: Mapping[str, Any], by_key: dict[str, str]) -> RunAgent | None:
    """The agent a line speaks of: by ``agentId``, else the last agent started under its key."""
    key = _s(line.get("key"))
    ident = _s(line.get("agentId")) or (by_key.get(key) if key else None)
    if ident is None:
        if key is None:
            return None
        ident = f"key-{key.split(':')[-1][:12]}"
    agent = run.agents.get(ident)
    if agent is None:
        agent = run.agents[ident] = RunAgent(ident, key)
    if key is not None:
        agent.key = agent.key or key
        by_key[key] = ident
    return agent


def read_journal(journal: JournalFile, session_id: str | None = None) -> WorkflowRun:
    """What one run's journal says; a cut last line or a bad line is reported, never raised."""
    run = WorkflowRun(journal.run_id, journal.name)
    read = read_lines(journal.data, name=journal.name, session_id=session_id)
    run.errors.extend(read.errors)
    by_key: dict[str, str] = {}
    for line in read.objects:
        kind = str(line.get("type"))
        if kind not in _KINDS:
            run.unknown_types[kind] = run.unknown_types.get(kind, 0) + 1
            continue
        if kind == "launched":
            run.launched = True
            continue
        agent = _agent(run, line, by_key)
        if agent is None:
            run.errors.append(
                WalkError("malformed", "journal", session_id, f"a {kind} line names no agent", journal.name)
            )
            continue
        if kind == "started":
            agent.label = _s(line.get("label")) or agent.label
            agent.phase = _s(line.get("phase")) or agent.phase
        elif kind == "result":
            agent.status = "cached" if line.get("cached") is True else "done"
            agent.result = line.get("result")
        elif agent.status == "started":  # a failure after a result does not undo the result
            agent.status = "failed"
    return run


def _missing(root_id: str, agent: RunAgent) -> ClaudeSession:
    sid = f"{root_id}.agent-{agent.agent_id}"
    record: JsonObj = {"id": sid, "title": agent.label, "time": {"created": None, "updated": None}}
    record |= {"agentId": agent.agent_id, "meta": {}}
    return ClaudeSession(sid, None, 1, "workflow-subagent", agent.label, [], record)


def attach_runs(
    tree: ClaudeTree, sessions: Sequence[ClaudeSession], journals: Sequence[JournalFile]
) -> list[ClaudeSession]:
    """Give each run's agents what its journal says (label, phase, status, result). An agent the
    journal names whose transcript is missing becomes a session without messages, reported, so
    the tree still shows every agent the run launched; the new sessions are returned."""
    by_agent = {str(s.record["agentId"]): s for s in sessions if s.record.get("agentId")}
    extra: list[ClaudeSession] = []
    for journal in journals:
        run = read_journal(journal, tree.root_id)
        tree.errors.extend(run.errors)
        tree.unknown_types.update(run.unknown_types)
        for agent in run.agents.values():
            s = by_agent.get(agent.agent_id)
            if s is None:
                s = by_agent[agent.agent_id] = _missing(tree.root_id, agent)
                extra.append(s)
                tree.errors.append(
                    WalkError(
                        "not_found",
                        "transcript",
                        s.session_id,
                        f"workflow run {run.run_id} names this agent; its transcript is missing",
                        journal.name,
                    )
                )
            s.workflow = agent.to_dict(run.run_id)
            if agent.label:  # the script's own name for the call says more than its prompt
                s.title = s.record["title"] = agent.label
    return extra
