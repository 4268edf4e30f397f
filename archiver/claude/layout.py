"""Where Claude Code keeps transcripts, for every layout it has used (the I/O edge of the readers).

``<config dir>/projects/<munged cwd>/``:
- ``<sessionId>.jsonl``: the session;
- ``<sessionId>/subagents/agent-<agentId>.jsonl`` with ``agent-<agentId>.meta.json`` (2.1), also
  deeper, in a ``Workflow`` run's folder (``subagents/workflows/<runId>/``, other versions nest
  it deeper) beside the run's ``journal.jsonl`` (read by ``workflow``); the run's summary
  ``<sessionId>/workflows/<runId>.json`` (read by ``runs``);
- ``agent-<8 hex>.jsonl`` beside the session files (2.0.x): the owning session is the
  ``sessionId`` inside the file;
- 1.0.x kept subagents inside the session file as sidechain lines (read by ``tree``).
A subagent whose session file is gone still forms a tree (with an empty root, reported).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from archiver.claude.resume import FINGERPRINT_BYTES, fingerprint, fingerprint_at, resume_entry, tree_prior
from archiver.claude.runs import RunFile, read_runs
from archiver.claude.stream import is_stream_json, tree_from_stream
from archiver.claude.tree import ClaudeTree, SubagentFile, build_tree
from archiver.claude.workflow import JournalFile
from archiver.errors import WalkError

__all__ = [
    "SessionFiles",
    "default_config_dir",
    "find_sessions",
    "is_claude_file",
    "is_stream_json",
    "load_grown",
    "load_tree",
    "resume_state",
    "session_files",
    "tree_of_file",
]


def default_config_dir() -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``: where the CLI writes."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


@dataclass
class SessionFiles:
    session_id: str
    project: str
    main: Path | None = None
    # (agent id, transcript, meta file or None)
    subagents: list[tuple[str, Path, Path | None]] = field(default_factory=list)
    # the journal.jsonl of each Workflow run, and the summary the CLI writes when a run ends
    journals: list[Path] = field(default_factory=list)
    runs: list[Path] = field(default_factory=list)

    def paths(self) -> Iterator[Path]:
        if self.main is not None:
            yield self.main
        for _, path, meta in self.subagents:
            yield path
            if meta is not None:
                yield meta
        yield from self.journals
        yield from self.runs


def _agent_id(path: Path) -> str:
    return path.name.removesuffix(".jsonl").removeprefix("agent-")


def _owner(path: Path) -> str | None:
    """The ``sessionId`` of a 2.0.x subagent file, from its first lines."""
    try:
        with path.open("rb") as fh:
            for _ in range(20):
                line = fh.readline(1 << 20)
                if not line:
                    return None
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    return str(obj["sessionId"])
    except OSError:
        return None
    return None


def _run_of(path: Path) -> str | None:
    """The Workflow run a subagent file belongs to: the folder it sits in, when that is not the
    ``subagents`` folder itself (nor a project folder, for 2.0.x files)."""
    folder = path.parent
    return folder.name if folder.name != "subagents" and "subagents" in folder.parts else None


def _with_meta(path: Path) -> Path | None:
    meta = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
    return meta if meta.is_file() else None


def _project_sessions(folder: Path, skipped: list[WalkError]) -> list[SessionFiles]:
    found: dict[str, SessionFiles] = {}

    def get(sid: str) -> SessionFiles:
        return found.setdefault(sid, SessionFiles(sid, folder.name))

    for entry in sorted(folder.iterdir()):
        if entry.suffix == ".jsonl" and not entry.is_file() and not (entry / "subagents").is_dir():
            # named like a transcript, yet no file to read: a folder, a dangling or looping link
            why = "a folder, not a transcript" if entry.is_dir() else "not a readable file (a broken link?)"
            skipped.append(WalkError("unreadable", "file", entry.stem, why, str(entry)))
        elif entry.is_file() and entry.suffix == ".jsonl":
            if entry.name.startswith("agent-"):
                owner = _owner(entry) or f"unknown-{_agent_id(entry)}"
                get(owner).subagents.append((_agent_id(entry), entry, _with_meta(entry)))
            else:
                get(entry.stem).main = entry
        elif entry.is_dir() and ((entry / "subagents").is_dir() or (entry / "workflows").is_dir()):
            _with_subagents(get(entry.name), entry)
    return list(found.values())


def find_sessions(config_dir: Path, skipped: list[WalkError] | None = None) -> list[SessionFiles]:
    """Every session under ``config_dir/projects`` (or ``config_dir`` itself when it is a
    project folder), sorted by project and session id; entries named like a transcript that
    cannot be one, and project folders that cannot be listed, are added to ``skipped``."""
    skipped = [] if skipped is None else skipped
    root = config_dir / "projects"
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else [config_dir]
    out: list[SessionFiles] = []
    for folder in folders:
        try:
            out.extend(_project_sessions(folder, skipped))
        except OSError as exc:
            skipped.append(WalkError("unreadable", "folder", None, str(exc), str(folder)))
    return out


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
        SubagentFile(str(path), agent_id, data, read(meta) if meta is not None else None, _run_of(path))
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
    files: SessionFiles, entry: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]
) -> tuple[ClaudeTree, dict[str, tuple[int, int]]] | None:
    """The tree of a session whose files grew since the read ``entry`` (``resume_state``) and
    its archived documents ``docs`` hold, reading each file only from where it stopped; with
    where each read began. None when the files cannot continue that read: read them whole."""
    known: Mapping[str, Any] = entry.get("files") or {}
    if files.main is None or not isinstance(known, Mapping):
        return None
    paths = [files.main, *(p for _, p, _ in files.subagents)]
    if set(known) - {str(p) for p in paths}:  # a file went away
        return None
    bases: dict[str, tuple[int, int]] = {}
    tails: dict[str, bytes] = {}
    try:
        for path in paths:
            _, offset, lines, print_ = known.get(str(path)) or ("", 0, 0, "")
            if offset and _fingerprint(path, int(offset)) != print_:
                return None  # rewritten, or shorter than what was read
            bases[str(path)] = (int(offset), int(lines))
            tails[str(path)] = _tail(path, int(offset))
        prior = tree_prior(docs, entry)
        subs = [
            SubagentFile(
                str(path),
                agent_id,
                tails[str(path)],
                meta.read_bytes() if meta is not None else None,
                _run_of(path),
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


def is_claude_file(path: Path) -> bool:
    """A ``.jsonl`` file Claude Code wrote: a transcript (lines with ``sessionId``) or
    stream-json output (``claude_code_version``, ``parent_tool_use_id``)."""
    if path.suffix != ".jsonl":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(min(200_000, os.fstat(fh.fileno()).st_size + 1))  # not 200 kB for a small file
    except OSError:
        return False
    return b'"sessionId"' in head or b'"claude_code_version"' in head or b'"parent_tool_use_id"' in head


def tree_of_file(path: Path) -> ClaudeTree:
    """The tree of one ``.jsonl`` file: stream-json output, a session transcript (with its
    subagent files beside it), or one subagent transcript on its own."""
    data = path.read_bytes()
    if is_stream_json(data):
        return tree_from_stream(data, name=str(path))
    if path.name.startswith("agent-"):
        sid = _owner(path) or path.stem
        return build_tree(sid, None, [SubagentFile(str(path), _agent_id(path), data, _read_meta(path))])
    return load_tree(_with_subagents(SessionFiles(path.stem, path.parent.name, path), path.with_suffix("")))


def _read_meta(path: Path) -> bytes | None:
    meta = _with_meta(path)
    try:
        return meta.read_bytes() if meta is not None else None
    except OSError:
        return None


def session_files(config_dir: Path, session_id: str) -> SessionFiles | None:
    """The files of one session under ``config_dir/projects``; None when its transcript is not there."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    for main in sorted((config_dir / "projects").glob(f"*/{session_id}.jsonl")):
        return _with_subagents(SessionFiles(session_id, main.parent.name, main), main.with_suffix(""))
    return None


def _with_subagents(files: SessionFiles, folder: Path) -> SessionFiles:
    """``files`` with what its session's ``folder`` holds (2.1 layout): the subagent transcripts,
    the journals of its Workflow runs and their summaries (``workflows/<runId>.json``)."""
    sub = folder / "subagents"
    if sub.is_dir():
        files.subagents += [(_agent_id(p), p, _with_meta(p)) for p in sorted(sub.rglob("agent-*.jsonl"))]
        files.journals += sorted(sub.rglob("journal.jsonl"))
    files.runs += sorted(p for p in (folder / "workflows").glob("*.json") if p.is_file())
    return files
