"""Reading session files for `octel detect`: any shape `archiver.convert_read` knows, gzipped
or not, and captures of OpenCode 2's `/api/event` (read by the tower's decoder and mirror); what
cannot be read becomes one `CorpusError` sentence naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archiver.claude.convert import from_claude
from archiver.claude.layout import sniff_file
from archiver.claude.loading import tree_of_file
from archiver.convert import Converted, from_opencode
from archiver.convert_events import merged_status, permissions_from_opencode, unwrap_event
from archiver.convert_read import NotASession, SessionStream, parse_json_text, read_session, read_tree
from archiver.files import read_plain
from archiver.session_files import is_v2_frames
from archiver.store import ArchiveStore
from tower.capture_v2 import capture_trees
from tower.events_v2 import V2Decoder

__all__ = ["CorpusError", "SessionStream", "load_stored", "load_stream", "load_tree", "read_json"]


class CorpusError(ValueError):
    """A file could not be read as a session or a label; the message says which and why."""


def _read_text(path: Path) -> str:
    # The archive reader's size limit holds here too: a small gzip that expands without bound
    # stops at the limit instead of filling memory.
    try:
        return read_plain(path).decode("utf-8", errors="replace")
    except (OSError, EOFError, ValueError) as e:
        raise CorpusError(f"cannot read {path}: {e}") from None


def load_stored(store: ArchiveStore, name: str, session_id: str | None = None) -> Converted:
    """The normalised stream of an archived session, read through the archive store (within
    its size limit, like a file)."""
    try:
        text = store.read(name).decode("utf-8", errors="replace")
    except (OSError, EOFError, ValueError) as e:
        raise CorpusError(f"cannot read {store.where(name)}: {e}") from None
    try:
        return read_session(text, session_id)
    except NotASession as e:
        raise CorpusError(f"{store.where(name)} is not a session: {e}") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except ValueError as e:
        raise CorpusError(f"cannot read {path}: {e}") from None


def _claude(path: Path, session_id: str | None) -> tuple[Converted, list[SessionStream]]:
    """A Claude Code transcript or stream-json output: its main session, or ``session_id``;
    and, when it holds more (subagents, sidechains kept inline), every session on its own."""
    try:
        tree = tree_of_file(path)
    except OSError as e:
        raise CorpusError(f"cannot read {path}: {e}") from None
    streams = {
        s.session_id: from_claude(s.messages, tree.results if s.depth == 0 else []) for s in tree.sessions
    }
    # a subagent's file on its own hangs under an empty root: the session with messages is judged
    chosen = next((s for s in tree.sessions if s.session_id == session_id), None) or next(
        (s for s in tree.sessions if s.messages), tree.sessions[0]
    )
    every = [
        SessionStream(s.session_id, s.parent_id, streams[s.session_id]) for s in tree.sessions if s.messages
    ]
    return streams[chosen.session_id], every if len(every) > 1 else []


def load_tree(path: Path, session_id: str | None = None) -> tuple[Converted, list[SessionStream]]:
    """The stream `load_stream` gives, and every session of the file when it holds several (a
    run log several runs or subagents wrote into, an event capture of parallel subagents, a
    recorded run, a Claude Code tree): parents before children, each to be judged on its own."""
    kind = sniff_file(path)  # by content: users keep these files under any name
    if kind == "result":
        raise CorpusError(
            f"{path} is the result of a Claude Code run, not its conversation: "
            f"add it with `octel runs add {path}` (it finds the transcript)"
        )
    if kind == "journal":
        raise CorpusError(
            f"{path} is the journal of a Claude Code Workflow run, not a conversation: its agents' "
            f"transcripts are the agent-*.jsonl files beside it (`octel detect {path.parent}`), "
            "and `octel import claude` archives them under their session"
        )
    if kind is not None:
        return _claude(path, session_id)
    text = _read_text(path)
    try:
        return read_tree(text, session_id)
    except NotASession as e:
        capture = _v2_capture(text, session_id)  # only when nothing else read it: no cost otherwise
        if capture is None:
            raise CorpusError(f"{path} is not a session: {e}") from None
        return capture


def _v2_capture(text: str, session_id: str | None) -> tuple[Converted, list[SessionStream]] | None:
    """A capture of OpenCode 2's `/api/event`, read as `octel watch` reads the stream (its
    decoder and mirror, `tower.capture_v2`): each session's messages, status and asks."""
    try:
        doc = parse_json_text(text)
    except NotASession:
        return None
    if not is_v2_frames(doc):
        return None
    dec = V2Decoder()
    events = [ev for frame in doc for ev in dec.decode(unwrap_event(frame)[0])]
    found = [s for t in capture_trees(doc) for s in t.sessions if s.messages]
    if not found:
        raise CorpusError("an OpenCode 2 event capture in which no session has a message")
    every = [
        SessionStream(
            s.session_id,
            s.parent_id,
            Converted(
                from_opencode(s.messages, session_id=s.session_id),
                merged_status([], events, s.session_id),
                permissions_from_opencode(events, session_id=s.session_id),
            ),
        )
        for s in found
    ]
    chosen = next((x for x in every if x.session_id == session_id), None) or next(
        (x for x in every if x.parent_id is None), every[0]
    )
    return chosen.stream, every if len(every) > 1 else []


def load_stream(path: Path, session_id: str | None = None) -> Converted:
    """The normalised stream of one file: an archive, a recorded run, an `opencode export`, a
    `opencode run --format json` log, an event capture, a message list, or a Claude Code
    transcript or stream-json output."""
    kind = sniff_file(path)
    if kind is not None:  # a result or a journal is named there
        return load_tree(path, session_id)[0]
    text = _read_text(path)
    try:
        return read_session(text, session_id)
    except NotASession as e:
        capture = _v2_capture(text, session_id)
        if capture is None:
            raise CorpusError(f"{path} is not a session: {e}") from None
        return capture[0]
