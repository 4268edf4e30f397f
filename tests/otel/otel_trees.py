"""Hypothesis strategies for session trees as the archiver writes them (real build_documents)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from archiver.document import build_documents
from archiver.walk import SessionSnapshot, TreeSnapshot

TOOLS = ("bash", "read", "edit", "grep")
STATUSES = ("completed", "completed", "error", "running")


@st.composite
def trees(draw: st.DrawFn, max_sessions: int = 6) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(archive documents, {child session: part id of the task call that launched it})."""
    n = draw(st.integers(1, max_sessions))
    root_tag = draw(st.text("abcdefXYZ0123", min_size=1, max_size=6))
    ids = [f"ses_{root_tag}{i}" for i in range(n)]
    parents: dict[str, str | None] = {ids[0]: None}
    for i in range(1, n):
        parents[ids[i]] = ids[draw(st.integers(0, i - 1))]
    clock = draw(st.integers(1_700_000_000_000, 1_800_000_000_000))
    launched: dict[str, str] = {}
    snaps = []
    depth = {ids[0]: 0}
    for i, sid in enumerate(ids):
        if i:
            depth[sid] = depth[parents[sid] or ids[0]] + 1
        kids = [c for c in ids if parents[c] == sid]
        msgs: list[dict[str, Any]] = [
            {
                "info": {"id": f"msg_{sid}_u", "role": "user", "time": {"created": clock}},
                "parts": [{"id": f"prt_{sid}_u", "type": "text", "text": f"prompt for {sid}"}],
            }
        ]
        turns = draw(st.integers(0, 4))
        for t in range(turns):
            start = clock = clock + draw(st.integers(0, 5_000))
            parts: list[dict[str, Any]] = [{"id": f"prt_{sid}_{t}_x", "type": "text", "text": f"turn {t}"}]
            for k in range(draw(st.integers(0, 3))):
                t0 = clock + draw(st.integers(0, 100))
                clock = t0 + draw(st.integers(0, 2_000))
                parts.append(
                    {
                        "id": f"prt_{sid}_{t}_{k}",
                        "type": "tool",
                        "tool": draw(st.sampled_from(TOOLS)),
                        "callID": f"call_{sid}_{t}_{k}",
                        "state": {
                            "status": draw(st.sampled_from(STATUSES)),
                            "input": {"n": k},
                            "output": "ok",
                            "time": {"start": t0, "end": clock},
                        },
                    }
                )
            # the last turn launches this session's children (unless a child stays unlinked)
            if t == turns - 1:
                for c in kids:
                    if draw(st.booleans()) or draw(st.booleans()):
                        pid = f"prt_{sid}_{t}_task_{c}"
                        launched[c] = pid
                        parts.append(
                            {
                                "id": pid,
                                "type": "tool",
                                "tool": "task",
                                "callID": f"call_{pid}",
                                "state": {
                                    "status": "completed",
                                    "input": {"prompt": "go"},
                                    "metadata": {"sessionId": c},
                                    "time": {"start": clock, "end": clock + 10},
                                },
                            }
                        )
            done = draw(st.booleans()) or t < turns - 1 or draw(st.booleans())
            cache = {"read": draw(st.integers(0, 5_000)), "write": draw(st.integers(0, 500))}
            info = {
                "id": f"msg_{sid}_{t}",
                "role": "assistant",
                "modelID": "m1",
                "providerID": "p1",
                "agent": "build",
                "finish": "stop" if done else None,
                "time": {"created": start, **({"completed": clock + 5} if done else {})},
                "cost": draw(st.floats(0, 1, allow_nan=False)),
                "tokens": {
                    "input": draw(st.integers(0, 10_000)),
                    "output": draw(st.integers(0, 2_000)),
                    "reasoning": draw(st.integers(0, 500)),
                    "cache": cache,
                },
            }
            if draw(st.integers(0, 9)) == 0:
                info["error"] = {"name": "APIError", "data": {"message": "boom"}}
            msgs.append({"info": info, "parts": parts})
        title = f"child {i} (@general subagent)" if i else "root"
        rec = {
            "id": sid,
            "parentID": parents[sid],
            "title": title,
            "time": {"created": msgs[0]["info"]["time"]["created"]},
        }
        snaps.append(SessionSnapshot(sid, parents[sid], depth[sid], session=rec, messages=msgs))
    tree = TreeSnapshot(ids[0], "http://127.0.0.1:4096", "1.0", snaps, [])
    docs = build_documents(tree, archived_at="2026-11-30T12:00:00+00:00", score=False)
    for d in docs:
        if draw(st.integers(0, 3)) == 0 and d["messages"]:
            d["findings"] = [
                {
                    "detector": "doom_loop",
                    "verdict": "stuck",
                    "score": 0.9,
                    "evidence": {},
                    "start_index": draw(st.integers(-1, len(d["messages"]))),
                }
            ]
    return docs, launched
