"""TreePlan on arbitrary graphs: BFS depth, each session once, limits honoured, never raises."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.tree import TreePlan

_ids = st.sampled_from([f"s{i}" for i in range(12)])
_graphs = st.dictionaries(_ids, st.lists(_ids, max_size=5), max_size=12)


def _bfs_distances(graph: dict[str, list[str]], root: str) -> dict[str, int]:
    dist = {root: 0}
    q = deque([root])
    while q:
        cur = q.popleft()
        for c in graph.get(cur, []):
            if c not in dist:
                dist[c] = dist[cur] + 1
                q.append(c)
    return dist


def _run(graph: dict[str, list[str]], root: str, max_depth: int, max_sessions: int) -> TreePlan:
    plan = TreePlan(root, max_depth=max_depth, max_sessions=max_sessions)
    level = [plan.nodes[0]]
    while level:
        nxt = []
        for node in level:
            nxt += plan.accept_children(node, [(c, node.session_id) for c in graph.get(node.session_id, [])])
        level = nxt
    return plan


@settings(max_examples=300)
@given(_graphs, _ids, st.integers(0, 6), st.integers(1, 20))
def test_bfs_plan(graph: dict[str, list[str]], root: str, max_depth: int, cap: int) -> None:
    plan = _run(graph, root, max_depth, cap)
    ids = [n.session_id for n in plan.nodes]
    assert len(ids) == len(set(ids)), "a session is walked once"
    assert ids[0] == root and len(ids) <= max(cap, 1)
    depths = [n.depth for n in plan.nodes]
    assert depths == sorted(depths), "breadth first"
    assert max(depths) <= max_depth
    by_id = {n.session_id: n for n in plan.nodes}
    for n in plan.nodes[1:]:
        assert n.parent_id in by_id and by_id[n.parent_id].depth == n.depth - 1
        assert n.session_id in graph.get(n.parent_id, [])
    dist = _bfs_distances(graph, root)
    if cap >= 12:
        # with no size cap, the plan is exactly the BFS ball of radius max_depth
        assert {i: by_id[i].depth for i in ids} == {i: d for i, d in dist.items() if d <= max_depth}
    left_out = {e.session_id for e in plan.errors if e.error_kind in ("depth_limit", "size_limit")}
    assert left_out <= set(dist) - set(ids)
    for n in ids:  # every listed child is walked or reported as left out
        assert all(c in by_id or c in left_out for c in graph.get(n, []))


def test_self_loop_is_a_cycle() -> None:
    plan = _run({"a": ["a", "b"], "b": ["a"]}, "a", 5, 10)
    assert [n.session_id for n in plan.nodes] == ["a", "b"]
    assert [e.error_kind for e in plan.errors] == ["cycle", "cycle"]


def test_wrong_declared_parent_is_inconsistent() -> None:
    plan = TreePlan("r")
    plan.accept_children(plan.nodes[0], [("c", "elsewhere")])
    assert [e.error_kind for e in plan.errors] == ["inconsistent"]
    assert [n.session_id for n in plan.nodes] == ["r", "c"]
