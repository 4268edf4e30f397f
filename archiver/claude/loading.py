"""A session's files read into a tree: whole, or from where an earlier read stopped (the I/O
edge of the readers; ``layout`` finds the files, ``tree`` builds the tree from their bytes)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from archiver.claude.layout import SessionFiles, agent_id_of, owner_of, read_meta, run_of, with_subagents
from archiver.claude.resume import (
    FINGERPRINT_BYTES,
    Namer,
    ResumeState,
    fingerprint,
    fingerprint_at,
    resume_entry,
    tree_prior,
)
from archiver.claude.runs import RunFile, read_runs
from archiver.claude.sniff import REWRITTEN, as_lines, kind_of
from archiver.claude.stream import is_stream_json, tree_from_stream
from archiver.claude.tree import ClaudeTree, SubagentFile, build_tree
from archiver.claude.workflow import JournalFile
from archiver.errors import WalkError

__all__ = [
    "MAX_LINE_BYTES",
    "LineTooLong",
    "load_grown",
    "load_tree",
    "read_capped",
    "resume_state",
    "tree_of_file",
]

# a longer line is refused while it is read, before it is held whole or parsed (a one-line
# transcript of 200 MB took 1.5 GB to parse before its archive was refused for its size)
MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20


class LineTooLong(OSError):
    """A line of a transcript is longer than ``MAX_LINE_BYTES``: the file is not read."""


def read_capped(path: Path, offset: int = 0, max_line: int | None = None) -> bytes:
    """The bytes of ``path`` from ``offset``, read in bounded chunks; raises ``LineTooLong`` as
    soon as a line passes ``max_line`` bytes (``MAX_LINE_BYTES``), holding at most that much
    of it."""
    limit = MAX_LINE_BYTES if max_line is None else max_line
    chunk_size = max(1, min(_CHUNK, limit))  # no line inside one chunk can pass the limit
    parts: list[bytes] = []
    run = 0  # bytes of the line being read so far
    lines = 1
    with path.open("rb") as fh:
        fh.seek(offset)
        size = os.fstat(fh.fileno()).st_size - offset
        if size <= limit:  # no line in it can pass the limit: one read, no chunks to join
            return fh.read(max(size, 0))  # what the file held when it was opened (it may be growing)
        while chunk := fh.read(chunk_size):
            last = chunk.rfind(b"\n")
            if last == -1:
                run += len(chunk)
            else:
                if run + chunk.find(b"\n") > limit:
                    break
                lines += chunk.count(b"\n")
                run = len(chunk) - last - 1
            if run > limit:
                break
            parts.append(chunk)
        else:
            return b"".join(parts)
    raise LineTooLong(f"line {lines} is longer than {limit} bytes: the file is not read")


def load_tree(files: SessionFiles) -> ClaudeTree:
    """Read the files of one session into a tree; unreadable files are reported, never raised."""
    errors: list[WalkError] = []
    whole: dict[str, bytes] = {}

    rewritten = False

    def read(path: Path, lines: bool = False) -> bytes | None:
        nonlocal rewritten
        try:
            data = read_capped(path)
        except LineTooLong as exc:
            errors.append(WalkError("too_large", "line", files.session_id, str(exc), str(path)))
            return None
        except OSError as exc:
            errors.append(WalkError("malformed", "file", files.session_id, str(exc), str(path)))
            return None
        if lines and _not_lines(data):
            rewritten = True
            return as_lines(data) or b""
        whole[str(path)] = data
        return data

    main = read(files.main, lines=True) if files.main is not None else None
    subs = [
        SubagentFile(str(path), agent_id, data, read(meta) if meta is not None else None, run_of(path))
        for agent_id, path, meta in files.subagents
        if (data := read(path, lines=True)) is not None
    ]
    journals = [
        JournalFile(str(p), p.parent.name, data) for p in files.journals if (data := read(p)) is not None
    ]
    tree = build_tree(files.session_id, main, subs, main_name=str(files.main or ""), journals=journals)
    runs = [RunFile(str(p), p.stem, data) for p in files.runs if (data := read(p)) is not None]
    tree.workflow_runs, run_errors = read_runs(runs, files.session_id)
    tree.errors.extend([*errors, *run_errors])
    tree.rewritten = rewritten
    for name, (_, consumed, _, _) in tree.reads.items():
        if (data := whole.get(name)) is not None and consumed <= len(data):
            tree.fingerprints[name] = fingerprint_at(data, consumed)
    return tree


def _not_lines(data: bytes) -> bool:
    """A transcript rewritten as one JSON array or pretty-printed (``sniff``), not the JSON
    Lines the CLI writes (each line starts ``{"``): told from its first bytes first."""
    head = data[:64].lstrip()
    if head[:2] == b'{"' or head[:1] not in (b"[", b"{"):
        return False
    return kind_of(data[:200_000]) in REWRITTEN


def _fingerprint(path: Path, offset: int) -> str | None:
    """``resume.fingerprint`` of a file read up to ``offset``; None when it is shorter."""
    try:
        with path.open("rb") as fh:
            head = fh.read(min(offset, FINGERPRINT_BYTES))
            fh.seek(start := max(0, offset - FINGERPRINT_BYTES))
            before = fh.read(offset - start)
    except OSError:
        return None
    return fingerprint(head, before) if len(before) == offset - start else None


def resume_state(tree: ClaudeTree, bases: dict[str, tuple[int, int]] | None = None) -> ResumeState | None:
    """What a later import keeps to read only what this tree's files gain (None when it cannot:
    1.0.x sidechains, a file unreadable or rewritten as JSON Lines)."""
    if any(s.agent == "sidechain" for s in tree.sessions) or not tree.reads or tree.rewritten:
        return None  # a rewritten file's offsets are in the lines made of it, not in the file
    bases = bases or {}
    prints: dict[str, str] = {}
    for name, (_, consumed, _, _) in tree.reads.items():
        base = bases.get(name, (0, 0))[0]
        # a file read whole was hashed as it was parsed; one read from an offset is read again
        got = (None if base else tree.fingerprints.get(name)) or _fingerprint(Path(name), base + consumed)
        if got is None:
            return None
        prints[name] = got
    return resume_entry(tree.reads, bases, prints)


def _tail(path: Path, offset: int) -> bytes:
    return read_capped(path, offset)


def load_grown(
    files: SessionFiles, entry: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], name: Namer
) -> tuple[ClaudeTree, dict[str, tuple[int, int]]] | None:
    """The tree of a session whose files grew since the read ``entry`` (``resume_state``, kept
    as ``resume.named_entry`` with ``name``) and its archived documents ``docs`` hold, reading
    each file only from where it stopped; with where each read began. None when the files
    cannot continue that read: read them whole."""
    known: Mapping[str, Any] = entry.get("files") or {}
    if files.main is None or not isinstance(known, Mapping):
        return None
    paths = [files.main, *(p for _, p, _ in files.subagents)]
    if set(known) - {name(str(p)) for p in paths}:  # a file went away
        return None
    bases: dict[str, tuple[int, int]] = {}
    tails: dict[str, bytes] = {}
    try:
        for path in paths:
            _, offset, lines, print_ = known.get(name(str(path))) or ("", 0, 0, "")
            if offset and _fingerprint(path, int(offset)) != print_:
                return None  # rewritten, or shorter than what was read
            bases[str(path)] = (int(offset), int(lines))
            tails[str(path)] = _tail(path, int(offset))
        prior = tree_prior(docs, entry, name)
        subs = [
            SubagentFile(
                str(path),
                agent_id,
                tails[str(path)],
                meta.read_bytes() if meta is not None else None,
                run_of(path),
            )
            for agent_id, path, meta in files.subagents
        ]
        # a run's journal is a short ledger with no usage in it (nothing it says is counted):
        # read whole each time, so what it gained (an agent started, a result) is never missed
        journals = [JournalFile(str(p), p.parent.name, p.read_bytes()) for p in files.journals]
        tree = build_tree(
            files.session_id,
            tails[str(files.main)],
            subs,
            main_name=str(files.main),
            journals=journals,
            prior=prior,
        )
        # a run's summary is small and written once, when the run ends: read whole each time
        tree.workflow_runs, run_errors = read_runs(
            [RunFile(str(p), p.stem, p.read_bytes()) for p in files.runs], files.session_id
        )
        tree.errors.extend(run_errors)
    except (OSError, ValueError, TypeError, KeyError):  # CannotResume included
        return None
    return tree, bases


def tree_of_file(path: Path) -> ClaudeTree:
    """The tree of one file, whatever its name (``sniff``): stream-json output, a session
    transcript (with its subagent files beside it), one subagent transcript on its own, or a
    JSON array of either's lines or those lines pretty-printed."""
    data = read_capped(path)
    kind = kind_of(data[:200_000])
    rewritten = kind in REWRITTEN
    if rewritten:
        data = as_lines(data) or b""
        kind = kind_of(data[:200_000])
    if kind == "stream" or (kind is None and is_stream_json(data)):
        return tree_from_stream(data, name=str(path))
    if kind == "subagent" or (kind is None and path.name.startswith("agent-")):
        sid = owner_of(path) or path.stem
        return build_tree(sid, None, [SubagentFile(str(path), agent_id_of(path), data, read_meta(path))])
    if path.suffix == ".jsonl" and not rewritten:
        return load_tree(
            with_subagents(SessionFiles(path.stem, path.parent.name, path), path.with_suffix(""))
        )
    return build_tree(_session_of(data) or path.stem, data, main_name=str(path))


def _session_of(data: bytes) -> str | None:
    """The ``sessionId`` of a transcript's first line that names one (a renamed file's name
    is not its session's id)."""
    for line in data[:1_000_000].splitlines()[:50]:
        try:
            sid = orjson.loads(line).get("sessionId")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(sid, str) and sid:
            return sid
    return None
