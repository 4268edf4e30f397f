"""Where Claude Code keeps transcripts, for every layout it has used (the I/O edge of the readers:
finding the files; ``loading`` reads them into trees).

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
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from archiver.claude.sniff import Kind, kind_of
from archiver.errors import WalkError

__all__ = [
    "Found",
    "SessionFiles",
    "agent_id_of",
    "default_config_dir",
    "find_sessions",
    "found_sessions",
    "is_claude_file",
    "meta_of",
    "owner_of",
    "read_meta",
    "run_of",
    "session_files",
    "sniff_file",
    "with_subagents",
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


def agent_id_of(path: Path) -> str:
    """The agent id in a subagent transcript's name (``agent-<id>.jsonl``)."""
    return path.name.removesuffix(".jsonl").removeprefix("agent-")


def owner_of(path: Path) -> str | None:
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


_SESSION_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _session_of_main(path: Path) -> str:
    """The session of a transcript: its name, as the CLI names it (``<sessionId>.jsonl``), or,
    for a file renamed (a published ``claude-session.jsonl``), the ``sessionId`` its lines name,
    so two renamed files are two sessions."""
    if _SESSION_NAME.fullmatch(path.stem):
        return path.stem
    return owner_of(path) or path.stem


def run_of(path: Path) -> str | None:
    """The Workflow run a subagent file belongs to: the folder it sits in, when that is not the
    ``subagents`` folder itself (nor a project folder, for 2.0.x files)."""
    folder = path.parent
    return folder.name if folder.name != "subagents" and "subagents" in folder.parts else None


def meta_of(path: Path) -> Path | None:
    """The meta file beside a subagent transcript, when there is one."""
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
                owner = owner_of(entry) or f"unknown-{agent_id_of(entry)}"
                get(owner).subagents.append((agent_id_of(entry), entry, meta_of(entry)))
            else:
                get(_session_of_main(entry)).main = entry
        elif entry.is_dir() and ((entry / "subagents").is_dir() or (entry / "workflows").is_dir()):
            with_subagents(get(entry.name), entry)
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
            found = list(_project_sessions(folder, skipped))
            out.extend(found)
            if not found:
                _unknown_layout(folder, skipped)
        except OSError as exc:
            skipped.append(WalkError("unreadable", "folder", None, str(exc), str(folder)))
    return out


Found = tuple[list[SessionFiles], list[WalkError]]  # the sessions found, and what was skipped


def found_sessions(config_dir: Path) -> Found:
    """``find_sessions`` and what it skipped: what a run looks for once and hands on."""
    skipped: list[WalkError] = []
    return find_sessions(config_dir, skipped), skipped


def _unknown_layout(folder: Path, skipped: list[WalkError]) -> None:
    """A project folder with no transcript where Claude Code keeps them that holds some deeper
    (a backup's ``projects/<p>/sessions/<id>.jsonl``): named with what was found, never a
    silent 0 sessions."""
    found: list[Path] = []
    for path in folder.rglob("*.jsonl"):
        if path.is_file() and sniff_file(path) not in (None, "journal"):
            found.append(path)
        if len(found) >= 1000:
            break
    if found:
        shown = ", ".join(str(p.relative_to(folder)) for p in sorted(found)[:3])
        why = (
            f"{len(found)}{'+' if len(found) >= 1000 else ''} transcripts in a layout octel does not read "
            f"(e.g. {shown}): not imported; Claude Code keeps them as projects/<project>/<session>.jsonl"
        )
        skipped.append(WalkError("unknown_layout", "folder", None, why, str(folder)))


def is_claude_file(path: Path) -> bool:
    """A file Claude Code wrote, whatever its name: a transcript (lines with ``sessionId``), a
    subagent's, stream-json output, a run's result or a JSON array of such lines (``sniff``)."""
    return sniff_file(path) is not None


def sniff_file(path: Path) -> Kind | None:
    """``sniff.kind_of`` of the file at ``path``; None when it is unreadable or none of them."""
    try:
        with path.open("rb") as fh:
            head = fh.read(min(200_000, os.fstat(fh.fileno()).st_size + 1))  # not 200 kB for a small file
    except OSError:
        return None
    return kind_of(head)


def session_files(config_dir: Path, session_id: str) -> SessionFiles | None:
    """The files of one session under ``config_dir/projects``; None when its transcript is not there."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    for main in sorted((config_dir / "projects").glob(f"*/{session_id}.jsonl")):
        return with_subagents(SessionFiles(session_id, main.parent.name, main), main.with_suffix(""))
    return None


def read_meta(path: Path) -> bytes | None:
    """The bytes of a subagent transcript's meta file; None when it is missing or unreadable."""
    meta = meta_of(path)
    try:
        return meta.read_bytes() if meta is not None else None
    except OSError:
        return None


def with_subagents(files: SessionFiles, folder: Path) -> SessionFiles:
    """``files`` with what its session's ``folder`` holds (2.1 layout): the subagent transcripts,
    the journals of its Workflow runs and their summaries (``workflows/<runId>.json``)."""
    sub = folder / "subagents"
    if sub.is_dir():
        files.subagents += [(agent_id_of(p), p, meta_of(p)) for p in sorted(sub.rglob("agent-*.jsonl"))]
        files.journals += sorted(sub.rglob("journal.jsonl"))
    files.runs += sorted(p for p in (folder / "workflows").glob("*.json") if p.is_file())
    return files
