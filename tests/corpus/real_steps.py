"""Building blocks for the recorded corpus's scenario scripts: tool calls in the argument shapes
OpenCode 1.18.33's tools take, and the text or reasoning a model puts between them.

A turn is one fake-LLM answer (`tests/e2e/fakellm.py`). Each run works in its own folder of the
shared project (`work/NAME/`), so runs recorded side by side do not edit each other's files,
though each step's `patch` part may still list files that other runs changed meanwhile.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["Steps"]

Turn = dict[str, Any]

_FILLER = [
    "Let me check that.",
    "Looking at the output.",
    "Next, the tests.",
    "I'll read the module first.",
    "That narrows it down.",
    "Checking the configuration.",
    "Now the other file.",
    "Let me verify.",
    "Good, moving on.",
    "Hmm, let me look again.",
    "I want to see the caller too.",
    "One more check.",
]
_THOUGHTS = [
    "The failure mentions the parser; the tokenizer may be at fault.",
    "I should compare the two outputs before changing anything.",
    "The config is read at import time, so the test sees the old value.",
    "Maybe the path is relative to the wrong folder.",
    "The helper is called from two places; both need the fix.",
]


class Steps:
    """Turn builders for one run; `rng` varies wording, shapes and what sits between calls."""

    def __init__(self, name: str, project: str) -> None:
        self.name = name
        self.rng = random.Random(name)
        self.dir = f"{project}/work/{name}"
        self.rel = f"work/{name}"

    # -- what sits around a call -----------------------------------------------------------
    def talk(self, turn: Turn, p_text: float = 0.5, p_reason: float = 0.3) -> Turn:
        r = self.rng.random()
        if r < p_text:
            turn["text"] = self.rng.choice(_FILLER)
        elif r < p_text + p_reason:
            turn["reasoning"] = self.rng.choice(_THOUGHTS)
        return turn

    def call(self, name: str, args: dict[str, Any], talk: bool = True) -> Turn:
        turn: Turn = {"tool_calls": [{"name": name, "arguments": args}]}
        return self.talk(turn) if talk else turn

    # -- tools -----------------------------------------------------------------------------
    def bash(self, command: str, *, timeout: int | None = None, talk: bool = True) -> Turn:
        args: dict[str, Any] = {"command": command}
        if self.rng.random() < 0.5:
            args["description"] = self.rng.choice(["Run it", "Check", "Run the command", "Look"])
        if timeout is not None:
            args["timeout"] = timeout
        return self.call("bash", args, talk)

    def read(self, path: str, talk: bool = True) -> Turn:
        args: dict[str, Any] = {"filePath": self.path(path)}
        if self.rng.random() < 0.25:
            args["limit"] = self.rng.choice([50, 200, 2000])
        return self.call("read", args, talk)

    def grep(self, pattern: str, talk: bool = True) -> Turn:
        args: dict[str, Any] = {"pattern": pattern}
        if self.rng.random() < 0.5:
            args["path"] = self.dir
        return self.call("grep", args, talk)

    def glob(self, pattern: str, talk: bool = True) -> Turn:
        return self.call("glob", {"pattern": pattern, "path": self.dir}, talk)

    def write(self, path: str, content: str, talk: bool = True) -> Turn:
        return self.call("write", {"filePath": self.path(path), "content": content}, talk)

    def edit(self, path: str, old: str, new: str, talk: bool = True) -> Turn:
        return self.call("edit", {"filePath": self.path(path), "oldString": old, "newString": new}, talk)

    def todo(self, items: list[tuple[str, str]], talk: bool = True) -> Turn:
        todos = [
            {"content": c, "status": s, "priority": "medium", "id": str(i)} for i, (c, s) in enumerate(items)
        ]
        return self.call("todowrite", {"todos": todos}, talk)

    def task(self, sub: str, description: str, agent: str = "general") -> Turn:
        prompt = f"{description}. [run {self.name}/{sub}]"
        return self.call("task", {"description": description, "prompt": prompt, "subagent_type": agent})

    def path(self, p: str) -> str:
        return p if p.startswith("/") else f"{self.dir}/{p}"

    # -- small recipes ---------------------------------------------------------------------
    def setup(self, files: dict[str, str]) -> list[Turn]:
        """Write the run's own files (one call per file, as a model scaffolding would)."""
        return [self.write(p, c) for p, c in files.items()]

    def explore(self, n: int, files: list[str]) -> list[Turn]:
        """`n` different look-around calls (reads, greps, globs, shell look-ups), no repeats."""
        words = [
            "def ",
            "import",
            "TODO",
            "return",
            "class ",
            "config",
            "test_",
            "raise",
            "json",
            "path",
            "open(",
            "self.",
            "assert",
            "logging",
            "parse",
        ]
        cmds = [
            "ls -la",
            "git status --short",
            "git log --oneline -5",
            "du -sh .",
            "find . -name '*.py'",
            "wc -l *.py",
            "cat README.md",
            "git diff --stat",
            "python3 --version",
            "env | grep -c PATH",
        ]
        pool: list[Turn] = [self.read(f) for f in files]
        pool += [self.grep(w) for w in words]
        pool += [self.glob(g) for g in ("**/*.py", "*.md", "**/*.json", "**/test_*", "src/**")]
        pool += [self.bash(c) for c in cmds]
        self.rng.shuffle(pool)
        out = pool[:n]
        for i in range(len(out), n):  # longer than the pool: new searches
            out.append(self.grep(f"{self.rng.choice(words)}{i}"))
        return out

    def end(self, text: str = "") -> Turn:
        return {
            "text": text
            or self.rng.choice(
                [
                    "Done.",
                    "All set: the change is in and tests pass.",
                    "Finished; summary above.",
                    "That should do it.",
                ]
            )
        }
