"""The recorder's indexes (root of each session, members of each root, trees changed since
their archive, the expiry heap) agree with the plain definitions they replace, whatever order
parents are learned in; and forgetting is driven by time alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from archiver.recorder import Recorder


def _naive_root(parents: dict[str, str | None], sid: str) -> str | None:
    cur, hops = sid, 0
    while hops < 64:
        if cur not in parents:
            return None
        p = parents[cur]
        if p is None:
            return cur
        cur, hops = p, hops + 1
    return None


_IDS = st.sampled_from([f"s{i}" for i in range(8)])
_LINKS = st.lists(st.tuples(_IDS, st.one_of(st.none(), _IDS)), max_size=30)


@given(_LINKS)
def test_root_and_members_match_the_parent_links(links: list[tuple[str, str | None]]) -> None:
    rec = Recorder()
    for sid, parent in links:
        rec.learn(sid, None if parent == sid else parent)
    for sid in rec.parents:
        assert rec.root_of(sid) == _naive_root(rec.parents, sid)
    roots = {r for s in rec.parents if (r := _naive_root(rec.parents, s)) is not None}
    for root in roots:
        assert set(rec.tree(root)) == {s for s in rec.parents if _naive_root(rec.parents, s) == root}


@given(_LINKS, st.lists(st.tuples(_IDS, st.floats(0, 100)), max_size=20))
def test_due_matches_the_definition(
    links: list[tuple[str, str | None]], changes: list[tuple[str, float]]
) -> None:
    rec = Recorder()
    for sid, parent in links:
        rec.learn(sid, None if parent == sid else parent)
    for sid, t in changes:
        rec.touch(sid, t)
    latest: dict[str, float] = {}
    for sid, t in rec.dirty.items():
        root = _naive_root(rec.parents, sid)
        if root is not None:
            latest[root] = max(t, latest.get(root, t))
    assert rec.due(200.0, settle=10.0) == sorted(latest)
    for root in latest:
        rec.mark_archived(root, 150.0)
    assert rec.due(300.0, settle=10.0) == []


def test_a_child_learned_before_its_parent_joins_the_tree_and_its_changes_count() -> None:
    rec = Recorder()
    rec.touch("kid", 5.0)
    assert rec.unknown() == {"kid"}
    rec.learn("kid", "mid")
    assert rec.unknown() == {"mid"} and rec.root_of("kid") is None
    rec.learn("mid", "top")
    rec.learn("top", None)
    assert rec.unknown() == set()
    assert set(rec.tree("top")) == {"top", "mid", "kid"}
    assert rec.due(10.0, settle=1.0) == ["top"]


def test_forget_pops_only_what_is_old_and_keeps_busy_or_changed_trees() -> None:
    rec = Recorder(forget_after=100.0)
    for i in range(3):
        rec.learn(f"r{i}", None)
        rec.learn(f"c{i}", f"r{i}")
        rec.touch(f"c{i}", 1.0)
        rec.mark_archived(f"r{i}", 2.0)
    rec.on_status_poll({"c1": {"type": "busy"}}, 3.0)  # r1 is busy again
    rec.touch("r2", 50.0)  # r2 changed after its archive
    assert rec.forget(50.0) == []
    assert rec.forget(103.0) == ["r0"]
    assert rec.tree("r0") == [] and "c0" not in rec.parents and "r1" in rec.parents
    rec.on_status_poll({}, 104.0)  # r1 idle now: changed, so kept until archived again
    assert rec.forget(300.0) == [] and rec.due(300.0, 1.0) == ["r1", "r2"]
    rec.mark_archived("r1", 300.0)
    assert rec.forget(401.0) == ["r1"]
    assert "r2" in rec.parents


def test_deleted_sessions_are_forgotten_too() -> None:
    rec = Recorder(forget_after=10.0)
    rec.on_event({"type": "session.updated", "properties": {"sessionID": "x", "info": {"id": "x"}}}, 1.0)
    rec.on_event({"type": "session.deleted", "properties": {"sessionID": "x"}}, 2.0)
    rec.on_event({"type": "session.deleted", "properties": {"sessionID": "never-seen"}}, 2.0)
    assert rec.due(100.0, 1.0) == []
    rec.forget(13.0)
    assert rec.size() == 0
