"""Pure breadth-first bookkeeping for a session tree: depth, cycles, repeats, limits.

No I/O: the walk feeds it the children it fetched, level by level, and it decides which of
them become nodes and which become ``WalkError`` entries. Property-tested on arbitrary graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archiver.errors import WalkError

__all__ = ["Node", "TreePlan"]


@dataclass(frozen=True)
class Node:
    session_id: str
    parent_id: str | None
    depth: int


@dataclass
class TreePlan:
    """BFS state: accepted nodes in visit order plus what was left out and why."""

    root_id: str
    max_depth: int = 8
    max_sessions: int = 5000
    nodes: list[Node] = field(default_factory=list)
    errors: list[WalkError] = field(default_factory=list)
    _by_id: dict[str, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        root = Node(self.root_id, None, 0)
        self.nodes.append(root)
        self._by_id[self.root_id] = root

    def node(self, session_id: str) -> Node | None:
        return self._by_id.get(session_id)

    def _is_ancestor(self, candidate: str, of: Node) -> bool:
        cur: Node | None = of
        while cur is not None:
            if cur.session_id == candidate:
                return True
            cur = self._by_id.get(cur.parent_id) if cur.parent_id else None
        return False

    def accept_children(
        self,
        parent: Node,
        children: list[tuple[str, str | None]],
    ) -> list[Node]:
        """Children of ``parent`` as (id, declared parentID); returns the new nodes."""
        new: list[Node] = []
        pid = parent.session_id
        for cid, declared in children:
            if declared is not None and declared != pid:
                self.errors.append(
                    WalkError(
                        "inconsistent", "parent", cid, f"listed under {pid} but its parentID is {declared}"
                    )
                )
            if cid in self._by_id:
                kind = "cycle" if self._is_ancestor(cid, parent) else "duplicate"
                self.errors.append(
                    WalkError(kind, "children", cid, f"{cid} met again under {pid}; not walked twice")
                )
                continue
            if parent.depth + 1 > self.max_depth:
                self.errors.append(
                    WalkError("depth_limit", "children", cid, f"deeper than {self.max_depth} under {pid}")
                )
                continue
            if len(self.nodes) >= self.max_sessions:
                self.errors.append(
                    WalkError(
                        "size_limit", "children", cid, f"tree has more than {self.max_sessions} sessions"
                    )
                )
                continue
            node = Node(cid, pid, parent.depth + 1)
            self._by_id[cid] = node
            self.nodes.append(node)
            new.append(node)
        return new
