"""The janitor's choice (`tower.janitor.judge`), property-tested: it never picks a tree that is
running, young, not archived in full, not read back valid, or changed since its archive; it
picks every tree that is none of those; and the reason it gives is the first check that fails."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tower.janitor import REASONS, ArchivedSession, ServerSession, TreeFacts, judge, screen
from tower.janitor_server import trees_of

NOW = 10_000_000_000
DAY = 86_400_000

ids = st.lists(st.integers(0, 30).map(lambda n: f"ses_{n:03d}"), min_size=1, max_size=5, unique=True)


@st.composite
def trees(draw: st.DrawFn) -> TreeFacts:
    sids = draw(ids)
    sessions = []
    archived: dict[str, ArchivedSession] = {}
    for sid in sids:
        updated = draw(st.one_of(st.none(), st.integers(NOW - 20 * DAY, NOW)))
        count = draw(st.one_of(st.none(), st.integers(0, 5)))
        sessions.append(ServerSession(sid, updated, count))
        if draw(st.booleans()) or draw(st.booleans()):
            problem = draw(st.sampled_from([None, None, None, "schema: messages is not an array"]))
            a_count = count if draw(st.booleans()) and count is not None else draw(st.integers(0, 5))
            a_updated = draw(st.one_of(st.none(), st.just(updated), st.integers(NOW - 20 * DAY, NOW)))
            archived[sid] = ArchivedSession(sid, problem, a_count, 2 * a_count, a_updated, 100)
    live = {
        sid: draw(st.sampled_from(["busy", "retry", "ask"])) for sid in sids if draw(st.integers(0, 4)) == 0
    }
    indexed = frozenset(s for s in sids if s in archived or draw(st.integers(0, 5)) == 0)
    read = draw(st.sampled_from([archived, archived, None]))
    return TreeFacts(sids[0], tuple(sessions), live, indexed, read)


def _safe(f: TreeFacts, limit: int) -> bool:
    """The definition, written out once more: every condition of a safe delete."""
    if any(s.session_id in f.live for s in f.sessions) or f.archived is None:
        return False
    if any(s.updated_ms is None or NOW - s.updated_ms < limit for s in f.sessions):
        return False
    for s in f.sessions:
        a = f.archived.get(s.session_id)
        if s.session_id not in f.indexed or a is None or a.problem is not None:
            return False
        if s.messages is None or s.messages != a.messages:
            return False
        if s.updated_ms is not None and (a.updated_ms is None or s.updated_ms > a.updated_ms):
            return False
    return True


@given(trees(), st.integers(0, 15 * DAY))
def test_a_tree_is_deleted_exactly_when_it_is_safe(facts: TreeFacts, limit: int) -> None:
    v = judge(facts, NOW, limit)
    assert v.delete == _safe(facts, limit)
    assert (v.reason is None) == v.delete and v.detail


@given(trees(), st.integers(0, 15 * DAY))
def test_the_reason_is_the_first_check_that_fails(facts: TreeFacts, limit: int) -> None:
    v = judge(facts, NOW, limit)
    if v.delete:
        return
    assert v.reason in REASONS
    running = any(s.session_id in facts.live for s in facts.sessions)
    assert (v.reason == "running") == running
    if v.reason == "young":
        assert facts.last_activity_ms is None or NOW - facts.last_activity_ms < limit
    if v.reason in ("unarchived", "incomplete", "invalid", "changed"):
        assert facts.last_activity_ms is not None and NOW - facts.last_activity_ms >= limit
    if v.reason == "unarchived":
        assert not facts.indexed
    if v.reason in ("invalid", "changed"):
        assert all(s.session_id in facts.indexed for s in facts.sessions)


@given(trees(), st.integers(0, 15 * DAY))
def test_screening_never_lets_through_what_it_could_already_refuse(facts: TreeFacts, limit: int) -> None:
    early = screen(facts, NOW, limit)
    if early is not None:
        assert judge(facts, NOW, limit) == early  # reading the archives never overturns it
    else:
        assert all(s.session_id in facts.indexed for s in facts.sessions) and not facts.live.keys() & {
            s.session_id for s in facts.sessions
        }


def test_a_verified_old_tree_is_deleted_and_one_new_message_keeps_it() -> None:
    old = NOW - 8 * DAY
    sessions = (ServerSession("ses_r", old, 3), ServerSession("ses_c", old, 2))
    archived = {
        s.session_id: ArchivedSession(s.session_id, None, s.messages or 0, 4, old, 10) for s in sessions
    }
    facts = TreeFacts("ses_r", sessions, {}, frozenset(archived), archived)
    assert judge(facts, NOW, 7 * DAY).delete
    grown = (sessions[0], ServerSession("ses_c", old, 3))
    v = judge(TreeFacts("ses_r", grown, {}, frozenset(archived), archived), NOW, 7 * DAY)
    assert (v.delete, v.reason) == (False, "changed") and "3 messages on the server, 2 archived" in v.detail


parents = st.dictionaries(
    st.integers(0, 20).map(lambda n: f"ses_{n:02d}"),
    st.one_of(st.none(), st.integers(0, 20).map(lambda n: f"ses_{n:02d}")),
    max_size=15,
)


@given(parents)
def test_every_listed_session_falls_in_one_tree_under_its_top_ancestor(links: dict[str, str | None]) -> None:
    listed = [{"id": k, "parentID": v, "time": {"updated": 1}} for k, v in links.items()]
    grouped = trees_of(listed)
    members = [s.session_id for t in grouped.values() for s in t]
    assert sorted(members) == sorted(links)  # each once
    for root, tree in grouped.items():
        assert tree[0].session_id == root
        parent = links[root]
        # a root's parent is not listed, or the links loop back into the tree
        assert parent is None or parent not in links or parent in {s.session_id for s in tree}
