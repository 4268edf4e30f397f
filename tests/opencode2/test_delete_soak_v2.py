"""A bounded soak of V2's delete race: trees (a root and its subagent) deleted the instant the
root goes idle (V2's delete removes every descendant), while `octel watch` follows. Every tree
must be archived whole: from the server when it was read in time, else from the mirror.
``OCTEL_SOAK_TREES`` sets how many (the suite runs a few; the measured soak runs 200)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fake_server import FakeOpenCode2
from test_watch_v2 import _store
from watch_v2 import until, watching

TREES = int(os.environ.get("OCTEL_SOAK_TREES", "12"))


def _tree(oc2: FakeOpenCode2, n: int) -> tuple[str, str]:
    root = oc2.session(title=f"soak {n}", agent="build")
    oc2.user(root, f"Task {n}.")
    child = oc2.session(parent=root, title=f"soak {n} helper", agent="general")
    oc2.user(child, "Help.")
    oc2.step(child, [{"type": "text", "text": f"helped {n}"}])
    oc2.idle(child)
    call = oc2.tool(
        "subagent", {"agent": "general", "description": "help"}, "done", metadata={"sessionID": child}
    )
    oc2.step(root, [call], finish="tool-calls")
    oc2.step(root, [{"type": "text", "text": f"done {n}"}])
    oc2.idle(root)
    oc2.route("DELETE", f"/api/session/{root}", {}, None)  # the instant it went idle
    return root, child


def test_no_tree_is_lost_to_the_delete_race(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url, settle=0.2) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        started = time.monotonic()
        trees = [_tree(oc2, n) for n in range(TREES)]
        want = {s for t in trees for s in t}
        until(lambda: want <= set(st.indexed()), timeout=60 + TREES, what="every tree archived")  # type: ignore[attr-defined]
        took = time.monotonic() - started
        rows = st.indexed()  # type: ignore[attr-defined]
        lost_rows = [x for x in st.lost() if not x.archived]  # type: ignore[attr-defined]
    lost = [
        r
        for r, c in trees
        if rows[r].walk_error_count or rows[c].walk_error_count or rows[r].message_count < 3  # user + 2 steps
    ]
    mirrored = sum("from the mirror" in m for m in st.logs)  # type: ignore[attr-defined]
    print(
        f"soak: {TREES} trees, {len(lost)} lost, {len(lost_rows)} lost-tree rows, "
        f"{mirrored} from the mirror, {took:.1f} s"
    )
    assert lost == [] and lost_rows == []
    assert all(rows[c].parent_session_id == r and rows[r].tree_session_count == 2 for r, c in trees)
