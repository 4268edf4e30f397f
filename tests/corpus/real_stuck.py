# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of stuck runs for the recorded corpus, about a dozen per pattern.

Each builder returns a run: the fake LLM's `script`, the prompt, what the driver does (answer
asks, abort when its time is up), the label a person gives it and `begins`, the root turn at
which the stuck pattern begins (the label file turns it into a message index).
"""

from __future__ import annotations

from typing import Any

from real_steps import Steps

__all__ = ["stuck_runs"]

Run = dict[str, Any]
APP = "def parse(s):\n    return s.split(',')\n"
CHECK = 'python3 -c \'import app; assert app.parse("a, b") == ["a", "b"], app.parse("a, b")\''


def _run(
    s: Steps,
    label: str,
    note: str,
    pre: list[Any],
    loop: list[Any],
    post: list[Any] | None = None,
    **extra: Any,
) -> Run:
    turns = pre + loop + (post or [])
    return {
        "name": s.name,
        "label": label,
        "note": note,
        "begins": len(pre),
        "prompt": extra.pop("prompt", "Fix the parser so the check passes."),
        "script": {"turns": turns},
        **extra,
    }


def _pre(s: Steps, k: int) -> list[Any]:
    """Setup plus `k` look-around calls: the healthy start every run has."""
    return s.setup({"app.py": APP}) + s.explore(k, ["app.py"])


def doom(i: int, project: str) -> Run:
    s = Steps(f"doom_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 5))
    kind = i % 6
    if kind == 0:  # the same call, text or reasoning between
        call = s.bash(f"cd {s.rel} && {CHECK}")
        loop = [s.talk({"tool_calls": call["tool_calls"]}, 0.6, 0.3) for _ in range(6)]
        note = "the same failing check again and again"
    elif kind == 1:  # whitespace variants of one command
        forms = [
            f"cd {s.rel} && npm test",
            f"cd {s.rel}  && npm test",
            f"cd {s.rel} &&  npm  test ",
            f"cd  {s.rel} && npm test",
        ]
        loop = [s.bash(forms[k % len(forms)]) for k in range(6)]
        note = "one command written with varying whitespace"
    elif kind == 2:  # key-order variants of the same read
        path = s.path("app.py")
        loop = [
            s.call("read", {"filePath": path, "limit": 200} if k % 2 else {"limit": 200, "filePath": path})
            for k in range(6)
        ]
        note = "the same read with its keys in varying order"
    elif kind == 3:  # period 2: check, re-read, check, re-read
        a, b = s.bash(f"cd {s.rel} && {CHECK}"), s.read("app.py")
        loop = [a, b] * 4
        note = "cycle of period 2"
    elif kind == 4:  # period 3 with text and reasoning between
        a, b, c = s.read("app.py"), s.grep("split"), s.bash(f"cd {s.rel} && {CHECK}")
        loop = [s.talk(dict(x), 0.5, 0.5) for x in [a, b, c] * 4]
        note = "cycle of period 3 through text and reasoning"
    else:  # edits that undo each other
        e1 = s.edit("app.py", "s.split(',')", "s.split(', ')")
        e2 = s.edit("app.py", "s.split(', ')", "s.split(',')")
        chk = s.bash(f"cd {s.rel} && {CHECK}")
        loop = [s.read("app.py")] + [e1, chk, e2, chk] * 3
        note = "edits that undo each other, with the check between"
    if i >= 6 and kind in (0, 3):  # a longer cycle in the second half: period 4
        a, b, c, d = s.read("app.py"), s.grep("parse"), s.bash(f"cd {s.rel} && {CHECK}"), s.glob("**/*.py")
        loop = [s.talk(dict(x), 0.4, 0.4) for x in [a, b, c, d] * 4]
        note = "cycle of period 4 through text and reasoning"
    return _run(s, "doom_loop", note, pre, loop)


def retry(i: int, project: str) -> Run:
    s = Steps(f"retry_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    if i % 2 == 0:  # the provider keeps failing; OpenCode retries and only the status shows it
        code, msg = [
            (529, "Overloaded"),
            (500, "Internal server error"),
            (503, "Service unavailable"),
            (429, "Rate limit reached for requests"),
        ][i // 2 % 4]
        err = {"http_error": code, "message": msg, "headers": {"retry-after-ms": str(150 + 50 * (i % 3))}}
        loop = [dict(err) for _ in range(5 + i % 3)]
        run = _run(
            s,
            "retry_cascade",
            f"provider keeps answering {code}",
            pre,
            loop,
            abort_after=3 + i % 4,
            also=["silent_stop"],
        )
        run["script"]["default"] = dict(err)  # it never comes back: the driver gives up
        return run
    # failing tool calls: different arguments, the same failure
    kind = i // 2 % 3
    if kind == 0:
        loop = [s.read(f"src/{n}.py") for n in ("main", "cli", "core", "util", "api", "models", "db")]
        note = "reads of files that do not exist"
    elif kind == 1:
        loop = [
            s.bash(f"cd {s.rel} && python3 -m {m}")
            for m in (
                "pytest",
                "nose",
                "tox",
                "unittest discover -s t",
                "mypy app.py",
                "ruff",
                "black --check .",
            )
        ]
        note = "one tool failing the same way with whatever arguments"
    else:
        loop = [
            s.bash(c)
            for c in (
                "make build",
                "make all",
                "make -C src",
                "make install",
                "make test",
                "make dist",
                "make check",
            )
        ]
        note = "make targets that all fail"
    return _run(s, "retry_cascade", note, pre, loop + [s.end("I could not get it to work.")])


def deadlock(i: int, project: str) -> Run:
    s = Steps(f"deadlock_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    kind = i % 5
    if kind == 0:
        perm = [{"permission": "bash", "pattern": "git *", "action": "ask"}]
        loop = [s.bash("git push origin HEAD")]
        note = "bash ask nobody answers"
    elif kind == 1:
        perm = [{"permission": "edit", "pattern": "*", "action": "ask"}]
        loop = [s.read("app.py"), s.edit("app.py", "s.split(',')", "[x.strip() for x in s.split(',')]")]
        note = "edit ask nobody answers"
    elif kind == 2:
        perm = []
        loop = [s.write(".env", "TOKEN=1\n"), s.read(".env")]
        note = "reading .env asks; nobody answers"
    elif kind == 3:
        perm = []
        loop = [s.read("/etc/hostname")]
        note = "outside-the-project read asks; nobody answers"
    else:  # denials that never stop the loop
        perm = [{"permission": "bash", "pattern": "rm *", "action": "deny"}]
        loop = [
            s.bash(c)
            for c in (
                "rm -rf build",
                "rm -rf dist",
                "rm -r build/",
                "rm -f *.pyc",
                "rm -rf .cache",
                "rm build -r",
            )
        ]
        return _run(
            s, "permission_deadlock", "rule denials again and again", pre, loop + [s.end()], permission=perm
        )
    if i >= 5 and kind == 0:  # the ask comes from a subagent
        # the session's own rules do not reach its subagents: the child asks on a default rule
        sub = {"turns": [s.read("/etc/hostname"), s.end()]}
        return _run(
            s,
            "permission_deadlock",
            "a subagent's ask nobody answers",
            pre,
            [s.task("sub", "Sync the repo"), s.end()],
            subs={"sub": sub},
            permission=perm,
            abort_after=6 + i % 5,
        )
    return _run(s, "permission_deadlock", note, pre, loop + [s.end()], permission=perm, abort_after=6 + i % 5)


def stuck_runs(project: str) -> list[Run]:
    from real_stuck2 import more_stuck_runs

    runs = [doom(i, project) for i in range(12)]
    runs += [retry(i, project) for i in range(11)]
    runs += [deadlock(i, project) for i in range(11)]
    return runs + more_stuck_runs(project)
