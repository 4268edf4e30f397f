"""Archive documents (the newest schema) of a Claude Code session tree (pure).

Same layout as an OpenCode tree's: the main session at depth 0, each subagent a child with its
depth and parent, per-turn metrics, own totals and subtree rollups, detector findings. What only
Claude Code has sits under ``claude`` (where it was read from, the CLI's ``result`` messages,
what was skipped) and, on the root, ``cost_check``. Redaction happens on the serialised text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import detectors
from archiver.claude.convert import from_claude
from archiver.claude.metrics import cost_check, per_turn
from archiver.claude.tree import ClaudeSession, ClaudeTree
from archiver.cut import cut
from archiver.document import ARCHIVER_VERSION, SCHEMA_VERSION
from archiver.metrics import rollup, totals
from archiver.redact import Redactor
from archiver.shape import RawJson as JsonObj
from detectors.findings import FindingDict

__all__ = ["SOURCE_KIND", "build_claude_documents", "score_claude"]

SOURCE_KIND = "claude_code"
_TITLE = 200


def score_claude(
    messages: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]] = ()
) -> list[FindingDict]:
    """Detector findings for one Claude session."""
    c = from_claude(messages, results)
    return [f.to_dict() for f in detectors.score(c.messages, status=c.status, permissions=c.permissions)]


def _model(turns: Sequence[Mapping[str, Any]]) -> str | None:
    models = Counter(str(t["model"]) for t in turns if t.get("model") and t["model"] != "<synthetic>")
    return models.most_common(1)[0][0] if models else None


def _short(text: str | None, redactor: Redactor | None) -> str | None:
    """A title cut to ``_TITLE`` characters after it is redacted: cut first, a secret across
    the cut would keep its head in clear (the document is redacted only after it is built)."""
    if text is None:
        return None
    return redactor.cut(text, _TITLE, "…") if redactor is not None else cut(text, _TITLE, "…")


def _stop(s: ClaudeSession) -> str | None:
    """What ended the session when its transcript says so (no CLI result needed)."""
    for m in reversed(s.messages):
        if m["info"].get("claude", {}).get("subtype") == "max_turns_reached":
            return "error_max_turns"
    return None


def _doc(
    tree: ClaudeTree, s: ClaudeSession, turns: list[JsonObj], own: JsonObj, sub: JsonObj, red: Redactor | None
) -> JsonObj:
    results = tree.results if s.depth == 0 else []
    errors = tree.errors if s.depth == 0 else [e for e in tree.errors if e.session_id == s.session_id]
    return {
        "source": {
            "kind": SOURCE_KIND,
            "server_url": None,
            "opencode_version": None,
            "messages_route": None,
            "claude_version": s.record.get("version") or tree.cli_version,
            "origin": tree.origin,
            "path": s.path,
        },
        "session_id": s.session_id,
        "root_session_id": tree.root_id,
        "parent_session_id": s.parent_id,
        "depth": s.depth,
        "agent": s.agent,
        "subagent_title": _short(s.title, red) if s.depth else None,
        "title": _short(s.title, red),
        "model": _model(turns),
        "session": s.record,
        "messages": s.messages,
        "diff": None,
        "todo": None,
        "per_turn": turns,
        "totals": own,
        "subtree": sub,
        "status_history": [],
        "permission_events": [],
        "walk_errors": [e.to_dict() for e in errors],
        "claude": {
            "stop": _stop(s),
            "tool_use_id": s.tool_use_id,
            "results": results,
            "skipped_lines": dict(sorted(tree.skipped.items())) if s.depth == 0 else {},
            "unknown_types": dict(sorted(tree.unknown_types.items())) if s.depth == 0 else {},
            # only a Workflow run's agents carry it: other documents stay as they were
            **({"workflow": s.workflow} if s.workflow is not None else {}),
            # only the root of a session whose Workflow runs left their summary files
            **({"workflow_runs": tree.workflow_runs} if s.depth == 0 and tree.workflow_runs else {}),
        },
    }


def build_claude_documents(
    tree: ClaudeTree,
    *,
    archived_at: str,
    label: str | None = None,
    score: bool = True,
    redactor: Redactor | None = None,
) -> list[JsonObj]:
    """One document per session of the tree, root first, parents before children; with a
    ``redactor``, titles are redacted before they are cut."""
    turns = {s.session_id: per_turn(s.messages) for s in tree.sessions}
    own = {s.session_id: totals(s.messages, turns[s.session_id]) for s in tree.sessions}
    sub = rollup(own, {s.session_id: s.parent_id for s in tree.sessions})
    check = cost_check(
        [t for ts in turns.values() for t in ts],
        results=tree.results,
        cost_state=tree.cost_state,
        unpriced_models=tree.unpriced_models,
        comparable=tree.origin == "transcript",
    )
    docs: list[JsonObj] = []
    for s in tree.sessions:
        sid = s.session_id
        body = _doc(tree, s, turns[sid], own[sid], sub[sid], redactor)
        findings = score_claude(s.messages, body["claude"]["results"]) if score else []
        verdict = detectors.worst_verdict(
            detectors.Finding(f["detector"], f["verdict"], f["score"]) for f in findings
        )
        docs.append(
            {
                "schema_version": SCHEMA_VERSION,
                "archived_at": archived_at,
                "archiver_version": ARCHIVER_VERSION,
                "label": label,
                **body,
                "findings": findings,
                "verdict": verdict,
                "cost_check": check if s.depth == 0 else None,
            }
        )
    return docs
