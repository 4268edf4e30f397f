"""What a shell command's result means: exit codes that are answers, not failures; a command
cut off by the tool's timeout; commands that wait for a person (an editor, a login prompt).

Pure string work on a bash call's command and output; called only on the rare calls that
exited non-zero or ran into the timeout, so it costs nothing on the common path.
"""

from __future__ import annotations

import json
import re

__all__ = ["command_of", "exit_is_answer", "hit_timeout", "is_interactive"]

# Programs whose exit status 1 answers a question ("no match", "they differ", "false").
_ANSWER_1 = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "diff", "cmp", "test", "[", "[[", "which", "pgrep", "comm"}
)
_SPLIT = re.compile(r"\|\||&&|;|\||\n")
_WRAPPERS = frozenset({"sudo", "env", "nice", "time", "command", "exec", "nohup", "stdbuf"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_TIMEOUT = ("terminated command after exceeding timeout", "command timed out", "timed out after")
_INTERACTIVE = re.compile(
    r"\b(?:vi|vim|nvim|nano|emacs|less|more|top|htop|crontab\s+-e|passwd|ssh-keygen(?!.*-N)|"
    r"gh\s+auth\s+login|npm\s+(?:init|login|adduser)(?!.*(?:-y|--yes))|"
    r"git\s+(?:\S+\s+)*?(?:rebase\s+(?:\S+\s+)*?-i|add\s+-p|add\s+--patch)|"
    r"git\s+(?:-c\s+\S+\s+)*(?:commit|tag\s+-a|merge)(?!.*(?:\s-m|\s--message|\s-F|\s--no-edit|\s-C)))\b"
)


def command_of(canonical_input: str) -> str:
    """The `command` of a bash call's canonical input ("" when there is none)."""
    try:
        cmd = json.loads(canonical_input).get("command", "")
    except (ValueError, AttributeError):
        return ""
    return cmd if isinstance(cmd, str) else ""


def _deciding_program(cmd: str) -> tuple[str, list[str]]:
    """The program whose status the shell returns: the last one of a pipeline or a list."""
    pieces = [p for p in _SPLIT.split(cmd) if p.strip()]
    words = pieces[-1].split() if pieces else []
    while words and (words[0] in _WRAPPERS or _ASSIGN.match(words[0]) or words[0] == "!"):
        words = words[1:]
    if words and words[0] == "timeout" and len(words) > 2:
        words = words[2:]
    return (words[0].rsplit("/", 1)[-1] if words else ""), words[1:]


def exit_is_answer(cmd: str, exit_code: int, output: str) -> bool:
    """True when this exit status means the command worked and answered no/false/different."""
    if exit_code != 1:
        return False
    prog, args = _deciding_program(cmd)
    if prog in _ANSWER_1:
        return True
    if (
        prog == "git"
        and ("--quiet" in args or "--exit-code" in args)
        and args[:1] in (["diff"], ["--no-pager"])
    ):
        return True
    if prog == "git" and args[:1] == ["diff"] and ("--quiet" in args or "--exit-code" in args):
        return True
    # `ssh -T git@host` greets and exits 1: the host gives no shell, the key worked
    return prog == "ssh" and "successfully authenticated" in output


def hit_timeout(output: str) -> bool:
    """The tool stopped the command when it ran past its timeout."""
    return any(t in output for t in _TIMEOUT)


def is_interactive(cmd: str) -> bool:
    """A command that waits for a person: an editor, a pager, a login or a commit message."""
    return _INTERACTIVE.search(cmd) is not None
