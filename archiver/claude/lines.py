"""JSON Lines as Claude Code writes them, read as far as they go (pure: bytes in, objects out).

A transcript is appended to while the CLI runs, so its last line may be cut short: that line is
reported as ``truncated`` and left out of ``consumed``, so an incremental reader starts there
next time. A bad line elsewhere is reported as ``malformed`` and skipped; reading goes on. A file
of garbage (binary, another format) would make a report and an archive of its every line: past
the first few, malformed lines are counted in one more error, not listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import orjson

from archiver.errors import WalkError
from archiver.shape import RawJson

__all__ = ["ReadLines", "read_lines", "split_sidechains"]


@dataclass
class ReadLines:
    """The objects of a JSON Lines text, what could not be read, and how many bytes were whole."""

    objects: list[RawJson] = field(default_factory=list)
    errors: list[WalkError] = field(default_factory=list)
    # bytes up to the end of the last complete line: where the next incremental read begins
    consumed: int = 0
    # the lines in those bytes (so a read that resumes there numbers its lines on)
    lines: int = 0
    # whole lines of a ``skip`` type, counted by type and never parsed
    skipped: Counter[str] = field(default_factory=Counter)


_TYPE_FIRST = b'{"type":"'
MAX_LISTED = 20  # malformed lines listed one by one per read; the rest are counted


def _malformed(out: ReadLines, error: WalkError, listed: list[int]) -> None:
    if listed[0] < MAX_LISTED:
        out.errors.append(error)
    listed[0] += 1


def read_lines(
    data: bytes,
    *,
    name: str = "",
    session_id: str | None = None,
    lines_before: int = 0,
    skip: frozenset[bytes] = frozenset(),
) -> ReadLines:
    """Every JSON object line of ``data`` (the part of a file after ``lines_before`` lines);
    never raises. A whole line that starts ``{"type":"X"`` with X in ``skip`` (bookkeeping the
    CLI writes, a third of a transcript's bytes) is counted under ``skipped``, not parsed."""
    out = ReadLines()
    pos = 0
    number = lines_before
    size = len(data)
    listed = [0]  # malformed lines seen
    while pos < size:
        end = data.find(b"\n", pos)
        whole = end != -1
        stop = end if whole else size
        raw = data[pos:stop].strip()
        number += 1
        next_pos = stop + 1 if whole else size
        if skip and whole and raw.startswith(_TYPE_FIRST):
            kind = raw[9 : raw.find(b'"', 9)]
            if kind in skip:
                out.skipped[kind.decode()] += 1
                out.consumed, out.lines = next_pos, number - lines_before
                pos = next_pos
                continue
        if not raw:
            if whole:
                out.consumed, out.lines = next_pos, number - lines_before
            pos = next_pos
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if not whole:
                # being written: left for the next read, not consumed
                out.errors.append(
                    WalkError("truncated", "line", session_id, f"line {number} is cut short", name)
                )
                break
            _malformed(out, WalkError("malformed", "line", session_id, f"line {number}: {exc}", name), listed)
            out.consumed, out.lines = next_pos, number - lines_before
            pos = next_pos
            continue
        if not isinstance(obj, dict):
            why = f"line {number} is not a JSON object"
            _malformed(out, WalkError("malformed", "line", session_id, why, name), listed)
        else:
            out.objects.append(obj)
        # a complete object without its newline is still whole: the CLI writes line and newline at once
        out.consumed, out.lines = next_pos, number - lines_before
        pos = next_pos
    if listed[0] > MAX_LISTED:
        more = f"{listed[0] - MAX_LISTED} more malformed lines, not listed"
        out.errors.append(WalkError("malformed", "line", session_id, more, name))
    return out


def split_sidechains(
    lines: list[RawJson],
) -> tuple[list[RawJson], dict[str, list[RawJson]]]:
    """Main lines, and the sidechain lines kept inline in a main file grouped by their chain's
    first uuid: a sidechain is its own session, judged apart from the session that started it
    (its searches and builds are not the main session's). A file of sidechain lines only (an
    agent's own transcript) is all main."""
    main: list[RawJson] = []
    chains: dict[str, list[RawJson]] = {}
    root_of: dict[str, str] = {}
    inline = any(ln.get("isSidechain") is False for ln in lines)
    for ln in lines:
        if not ln.get("isSidechain") or (ln.get("agentId") and not inline):
            main.append(ln)
            continue
        uid, parent = str(ln.get("uuid")), ln.get("parentUuid")
        root = root_of.get(str(parent)) if parent else None
        root = root or uid
        root_of[uid] = root
        chains.setdefault(root, []).append(ln)
    return main, chains
