"""A session's files read into a tree: whole, or from where an earlier read stopped (the I/O
edge of the readers; ``layout`` finds the files, ``tree`` builds the tree from their bytes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from archiver.claude.layout import SessionFiles, agent_id_of, owner_of, read_meta, run_of, with_subagents
from archiver.claude.resume import (
    FINGERPRINT_BYTES,
    Namer,
    fingerprint,
    fingerprint_at,
    resume_entry,
    tree_prior,
)
from archiver.claude.runs import RunFile, read_runs
from archiver.claude.stream import is_stream_json, tree_from_stream
from archiver.claude.tree import ClaudeTree, SubagentFile, build_tree
from archiver.claude.workflow import JournalFile
from archiver.errors import WalkError

__all__ = ["load_grown", "load_tree", "resume_state", "tree_of_file"]


def load_tree(files: SessionFiles) -> ClaudeTree:
    """Read the files of one session into a tree; unreadable files are reported, never raised."""
    errors: list[WalkError] = []
    whole: dict[str, bytes] = {}

    def read(path: Path) -> bytes | None:
        try:
            whole[str(path)] = data = path.read_bytes()
            return data
        except OSError as exc:
            errors.append(WalkError("malformed", "file", files.session_id, str(exc), str(path)))
            return None

    main = read(files.main) if files.main is not None else None
    subs = [
        SubagentFile(str(path), agent_id, data, read(meta) if meta is not None else None, run_of(path))
        for agent_id, path, meta in files.subagents
        if (data := read(path)) is not None
    ]
    journals = [
        JournalFile(str(p), p.parent.name, data) for p in files.journals if (data := read(p)) is not None
    ]
    tree = build_tree(files.session_id, main, subs, main_name=str(files.main or ""), journals=journals)
    runs = [RunFile(str(p), p.stem, data) for p in files.runs if (data := read(p)) is not None]
    tree.workflow_runs, run_errors = read_runs(runs, files.session_id)
    tree.errors.extend([*errors, *run_errors])
    for name, (_, consumed, _, _) in tree.reads.items():
        if (data := whole.get(name)) is not None and consumed <= len(data):
            tree.fingerprints[name] = fingerprint_at(data, consumed)
    return tree


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


def resume_state(tree: ClaudeTree, bases: dict[str, tuple[int, int]] | None = None) -> dict[str, Any] | None:
    """What a later import keeps to read only what this tree's files gain (None when it cannot:
    1.0.x sidechains, a file unreadable)."""
    if any(s.agent == "sidechain" for s in tree.sessions) or not tree.reads:
        return None
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
    with path.open("rb") as fh:
        fh.seek(offset)
        return fh.read()


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
    """The tree of one ``.jsonl`` file: stream-json output, a session transcript (with its
    subagent files beside it), or one subagent transcript on its own."""
    data = path.read_bytes()
    if is_stream_json(data):
        return tree_from_stream(data, name=str(path))
    if path.name.startswith("agent-"):
        sid = owner_of(path) or path.stem
        return build_tree(sid, None, [SubagentFile(str(path), agent_id_of(path), data, read_meta(path))])
    return load_tree(with_subagents(SessionFiles(path.stem, path.parent.name, path), path.with_suffix("")))
