"""One pass over a message's parts, shared by every detector.

The probe digests each message once (O(parts)); detectors then read the digest, so adding a
detector does not add another walk over the parts.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from detectors.commands import command_of, exit_is_answer
from detectors.model import Compaction, Message, Patch, Reasoning, Retry, StepFinish, Text, ToolCall

__all__ = [
    "FILE_TOOLS",
    "Call",
    "Turn",
    "call_signature",
    "digest",
    "error_signature",
    "is_wait",
    "output_shape",
    "undo_of",
]

# Tools whose successful call changes files (a `patch` part also says so).
FILE_TOOLS = frozenset({"edit", "write", "patch", "multiedit", "apply_patch"})
_SLEEP = re.compile(r"\bsleep\s+[0-9.]")
_WAIT_TOOLS = frozenset({"sleep", "wait"})
_VOLATILE = re.compile(r"(/[^\s'\"]+)|(\d+(\.\d+)?)|('[^']*')|(\"[^\"]*\")")
# What changes between two runs of the same command without anything having changed: paths
# (temp dirs), durations, clock times, long ids and hashes. Small counts are kept: "3 of 9 ready"
# moving to "4 of 9 ready" is news.
_NOISE = re.compile(
    r"(/[^\s'\"]+)|(\d+\.\d+)|(\d+\s?(?:ms|us|µs|s|sec|secs|seconds)\b)|(\d{1,2}:\d{2}(?::\d{2})?)"
    r"|(\b\d{5,}\b)|(\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]{5,}\b)"
)
_HEAD = 200
_DENIED = ("rule which prevents you", "rejected permission")


def is_wait(tool: str, canonical_input: str) -> bool:
    """A call that only waits (a bash `sleep`): not activity, not a loop by itself."""
    if tool in _WAIT_TOOLS:
        return True
    return tool == "bash" and "sleep" in canonical_input and _SLEEP.search(canonical_input) is not None


def error_signature(call: ToolCall) -> str:
    """How a call failed, with paths, numbers and quoted values blanked ("" if it did not).

    Two calls with different arguments that fail for the same reason share a signature.
    """
    if call.status == "completed" and call.tool != "invalid" and not call.exit_code:
        return ""  # the common case, first
    if call.status == "error":
        head = call.error.strip().split("\n", 1)[0][:160]
        return "error:" + _VOLATILE.sub("_", head)
    if call.tool == "invalid":
        return "invalid:" + _VOLATILE.sub("_", call.output.strip().split("\n", 1)[0][:120])
    if call.exit_code is not None and call.exit_code != 0:
        if call.tool == "bash" and exit_is_answer(
            command_of(call.canonical_input), call.exit_code, call.output
        ):
            return ""  # grep found nothing, diff saw a difference: an answer, not a failure
        return f"exit:{call.exit_code}"
    return ""


_WS = re.compile(r"(?:\\[nrt]|\s)+")
_QUOTE_WS = re.compile(r' ?" ?')


def names_file(command: str, path: str) -> bool:
    """The command names this file: by its last two path parts, or by its bare name standing
    alone (`sed -i ... app.py`). `cat work/a/status.txt` does not name `work/b/status.txt`."""
    parts = path.rstrip("/").rsplit("/", 2)
    if len(parts) >= 2 and f"{parts[-2]}/{parts[-1]}" in command:
        return True
    name = parts[-1]
    at = command.find(name)
    while at >= 0:
        if at == 0 or command[at - 1] in " \"'=<>":
            return True
        at = command.find(name, at + 1)
    return False


def undo_of(sig: str) -> str | None:
    """The signature of the edit that reverts this one (old and new swapped), if it is an edit."""
    if not sig.startswith("edit\x00"):
        return None
    try:
        args = json.loads(sig[5:])
        args["oldString"], args["newString"] = args["newString"], args["oldString"]
    except (ValueError, KeyError, TypeError):
        return None
    return call_signature("edit", json.dumps(args, sort_keys=True, separators=(",", ":")))


def call_signature(tool: str, canonical_input: str) -> str:
    """What "the same call" means: tool and canonical input, with runs of whitespace inside
    string values taken as one space and none at a value's ends (`ls  -la ` is `ls -la`), and
    a bash call's free-text `description` left out (the command is the call)."""
    if tool == "bash" and '"description":' in canonical_input:
        try:
            args = json.loads(canonical_input)
            args.pop("description", None)
            canonical_input = json.dumps(args, sort_keys=True, separators=(",", ":"))
        except (ValueError, AttributeError):
            pass
    if " " in canonical_input or "\\" in canonical_input:
        canonical_input = _QUOTE_WS.sub('"', _WS.sub(" ", canonical_input))
    return tool + "\x00" + canonical_input


# Not frozen: a digest is built for every message and frozen dataclasses are slower to build.
# Treat both as read-only.
@functools.lru_cache(maxsize=4096)
def output_shape(text: str) -> str:
    """An output with its noise blanked (paths, durations, clock times, long ids, hashes).
    Cached: loops and polls see the same few answers again and again."""
    return _NOISE.sub("_", text)


@dataclass(slots=True)
class Call:
    sig: str  # tool + canonical input: what "the same call" means
    tool: str
    part_id: str
    status: str
    error_sig: str  # "" when the call succeeded (or has not finished)
    wait: bool
    denied: bool
    interrupted: bool
    call_id: str = ""
    output_head: str = ""  # the first characters of the output (or error)
    timed_out: bool = False
    output_tail: str = ""  # its last characters, where a build or test run sums itself up


@dataclass(slots=True)
class Turn:
    """What the detectors need to know about one message."""

    index: int
    id: str
    role: str
    calls: tuple[Call, ...]
    text: str  # the message's own (non-synthetic) text, whitespace collapsed
    has_reasoning: bool
    file_change: bool  # the session's own calls changed a file (see `edits`)
    # Signatures of those changes: a change made before (an edit undone and redone) is no news.
    edits: tuple[str, ...]
    compaction: bool
    error: str | None
    completed: bool
    finish: str | None
    output_tokens: int
    retry_attempt: int
    summary: bool = False  # a compaction summary: the model's text, but no turn of the work

    @property
    def active(self) -> bool:
        """Text or a tool call other than a wait: the model said or did something."""
        return bool(self.text) or any(not c.wait for c in self.calls)


def digest(m: Message) -> Turn:
    calls: list[Call] = []
    texts: list[str] = []
    edits: list[str] = []
    commands: list[str] = []
    patched: list[str] = []
    reasoning = compaction = False
    retry = 0
    for p in m.parts:
        if isinstance(p, StepFinish):
            continue  # every step has one; nothing here that the message does not say
        if isinstance(p, ToolCall):
            sig = call_signature(p.tool, p.canonical_input)
            esig = error_signature(p)
            denied = p.denied or (bool(esig) and p.status == "error" and any(d in p.error for d in _DENIED))
            calls.append(
                Call(
                    sig,
                    p.tool,
                    p.part_id,
                    p.status,
                    esig,
                    is_wait(p.tool, p.canonical_input),
                    denied,
                    p.interrupted,
                    p.call_id,
                    (p.output or p.error)[:_HEAD],
                    p.timed_out,
                    (p.output or p.error)[-_HEAD:] if len(p.output or p.error) > _HEAD else "",
                )
            )
            if p.status == "completed" and p.tool in FILE_TOOLS:
                edits.append(sig)
            elif p.tool == "bash":
                commands.append(p.canonical_input)
        elif isinstance(p, Text):
            if not p.synthetic and p.text.strip():
                texts.append(p.text)
        elif isinstance(p, Reasoning):
            reasoning = reasoning or bool(p.text.strip())
        elif isinstance(p, Patch):
            # The step's snapshot lists every file changed in the project meanwhile, whoever
            # changed it; only files this session's own commands name are its own changes.
            patched.extend(p.files)
        elif isinstance(p, Compaction):
            compaction = True
        elif isinstance(p, Retry):
            retry = max(retry, p.attempt)
    text = " ".join(" ".join(texts).split()).lower() if texts else ""
    if patched and commands:
        for c in commands:  # the same command changing the same file again is no news
            edits.extend(f"bash\x00{c}\x00{f}" for f in patched if names_file(c, f))
    return Turn(
        index=m.index,
        id=m.id,
        role=m.role,
        calls=tuple(calls),
        text=text,
        has_reasoning=reasoning,
        file_change=bool(edits),
        edits=tuple(edits),
        compaction=compaction,
        error=m.error,
        completed=m.completed,
        finish=m.finish,
        output_tokens=m.output_tokens,
        retry_attempt=retry,
        summary=m.summary,
    )
