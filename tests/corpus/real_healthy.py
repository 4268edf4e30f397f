# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of healthy runs that look like stuck ones: the hard negatives.

Polling that succeeds, test -> fix -> test, one flaky retry, asks that are answered, long
investigations that end in an edit, exit codes that mean success, subagents, a single provider
retry or compaction, long runs that make progress, long answers that finish.
"""

from __future__ import annotations

from typing import Any

from real_steps import Steps
from real_stuck import APP, CHECK

__all__ = ["healthy_runs"]

Run = dict[str, Any]
FIXED = "def parse(s):\n    return [x.strip() for x in s.split(',')]\n"


def _run(s: Steps, note: str, turns: list[Any], **extra: Any) -> Run:
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": extra.pop("prompt", "Fix the parser so the check passes."),
        "script": {"turns": turns},
        **extra,
    }


def _fix(s: Steps) -> list[Any]:
    return [
        s.read("app.py"),
        s.edit("app.py", "return s.split(',')", "return [x.strip() for x in s.split(',')]"),
    ]


def _healthy(kind: str, i: int, project: str) -> Run:
    s = Steps(f"ok_{kind}_{i:02d}", project)
    setup = s.setup({"app.py": APP})
    chk = s.bash(f"cd {s.rel} && {CHECK}")
    if kind == "testfix":
        t = setup + s.explore(i % 4, ["app.py"]) + [chk] + _fix(s) + [dict(chk)]
        if i % 2:  # a second round: another failing case, fixed too
            t += [s.bash(f"cd {s.rel} && python3 -c 'import app; assert app.parse(\"\") == []'")]
            t += [s.edit("app.py", "return [x.strip()", "return [] if not s else [x.strip()"), dict(t[-1])]
        return _run(s, "test-fix-test that makes progress", t + [s.end()])
    if kind == "poll":  # a job that moves on between polls and finishes after a few of them
        n = 4 + i
        f = f"{s.rel}/job.step"
        poll = (
            f"sleep 0.{3 + i % 3}; k=$(( $(cat {f} 2>/dev/null || echo 0) + 1 )); echo $k > {f}; "
            f"[ $k -ge {n} ] && echo 'job finished' || echo \"job running: step $k of {n}\""
        )
        t = setup + [s.bash(poll, talk=k % 3 == 0) for k in range(n)]
        return _run(s, "polling with sleep that succeeds", t + [s.end("The job finished.")])
    if kind == "flaky":  # fails once, then the same command works
        once = "{ touch .warm; echo 'connection reset' >&2; exit 1; }"
        cmd = f"cd {s.rel} && (test -f .warm || {once}) && echo fetched"
        t = setup + s.explore(i % 3, ["app.py"]) + [s.bash(cmd), s.bash(cmd)] + _fix(s) + [chk]
        return _run(s, "one flaky retry", t + [s.end()])
    if kind == "guard":  # three identical calls in one answer: OpenCode asks, the ask is answered
        call = {"name": "bash", "arguments": {"command": f"ls {s.rel}"}}
        t = setup + [{"text": "Listing three times.", "tool_calls": [call, call, call]}] + _fix(s) + [chk]
        return _run(s, "an answered doom-loop ask", t + [s.end()], reply="once")
    if kind == "asked":
        perm = [{"permission": "bash", "pattern": "*", "action": "ask"}]
        t = setup + [chk] + _fix(s) + [dict(chk), s.bash("git status --short")]
        return _run(s, "permission asks that are answered", t + [s.end()], permission=perm, reply="once")
    if kind == "investigate":  # a long look around, then the fix
        t = setup + s.explore(10 + i // 2, ["app.py", "README.md"]) + _fix(s) + [chk]
        return _run(s, "many different reads, then the fix", t + [s.end()])
    if kind == "exitok":  # exit codes that mean success for that command
        cmds = [
            f"grep -n TODO {s.rel}/app.py",
            f"grep -rq FIXME {s.rel}",
            f"diff {s.rel}/app.py {s.rel}/app.py.orig",
            f"test -f {s.rel}/setup.py",
            f"cd {s.rel} && git diff --quiet --no-index app.py app.py.orig",
            f"grep -c import {s.rel}/app.py",
            f"cmp -s {s.rel}/app.py {s.rel}/app.py.orig",
        ]
        t = setup + [s.write("app.py.orig", FIXED)] + [s.bash(c) for c in cmds] + _fix(s) + [chk]
        return _run(s, "commands whose exit 1 means no match or a difference", t + [s.end()])
    if kind == "subagent":
        sub = {"turns": s.explore(3 + i % 3, ["app.py"]) + [s.end("The parser splits on commas only.")]}
        t = setup + [s.task("sub", "Find out how the parser works")] + _fix(s) + [chk]
        return _run(s, "a subagent does the reading", t + [s.end()], subs={"sub": sub})
    if kind == "oneretry":
        err = {
            "http_error": [529, 500, 429][i % 3],
            "message": "Overloaded",
            "headers": {"retry-after-ms": "200"},
        }
        t = setup + [chk, err] + _fix(s) + ([dict(err)] if i % 2 else []) + [chk]
        return _run(s, "one provider retry, then on", t + [s.end()])
    if kind == "onecompact":
        over = {
            "http_error": 400,
            "body": {
                "error": {"message": "maximum context length exceeded", "code": "context_length_exceeded"}
            },
        }
        t = setup + s.explore(3, ["app.py"]) + [over] + _fix(s) + [chk]
        return _run(s, "one compaction, then the work finishes", t + [s.end()])
    if kind == "long":  # a long run with an edit every few steps
        t = setup + [s.read("app.py")]
        for k in range(4 + i // 2):
            t += s.explore(2, ["app.py"])
            t.append(s.write(f"mod_{k}.py", f"VALUE = {k}\n"))
        return _run(s, "a long run that keeps making files", t + _fix(s) + [chk, s.end()])
    if kind == "todos":
        items = ["read parser", "fix split", "run check"]
        t = setup + [s.todo([(x, "pending") for x in items])] + [s.read("app.py")]
        t += [s.todo([(items[0], "completed"), (items[1], "in_progress"), (items[2], "pending")])]
        t += _fix(s)[1:] + [
            s.todo([(items[0], "completed"), (items[1], "completed"), (items[2], "in_progress")]),
            chk,
        ]
        t += [s.todo([(x, "completed") for x in items])]
        return _run(s, "a todo list that follows real edits", t + [s.end()])
    if kind == "reasoning":
        long = " ".join(
            s.rng.choice(
                [
                    "The split keeps spaces.",
                    "Callers pass user input.",
                    "Strip each field.",
                    "Empty input should give an empty list.",
                    "Keep the order.",
                ]
            )
            for _ in range(40)
        )
        t = setup + [{"reasoning": long, "text": "I have a plan.", "tool_calls": _fix(s)[0]["tool_calls"]}]
        return _run(s, "long reasoning before a big edit", t + _fix(s)[1:] + [chk, s.end()])
    if kind == "longanswer":  # a long final answer that ends normally
        lines = [
            f"- `{s.rng.choice(['app', 'cli', 'core'])}.{w}` handles {x}"
            for w, x in zip(
                ["parse", "load", "dump", "main", "check", "run"] * 6,
                [f"case {k}" for k in range(36)],
                strict=False,
            )
        ]
        t = setup + s.explore(2, ["app.py"]) + [{"text": "Summary of the modules:\n" + "\n".join(lines)}]
        return _run(s, "a long answer that finishes", t)
    if kind == "retimeout":  # a slow command hits its timeout; the model reruns it with more time
        cmd = f"cd {s.rel} && sleep 3 && {CHECK.split(' -c ')[0]} -c 'import app'"
        t = setup + [s.bash(cmd, timeout=1000), s.bash(cmd, timeout=20000)] + _fix(s) + [chk]
        return _run(s, "a command hits its timeout and is rerun with a longer one", t + [s.end()])
    if kind == "rereads":  # read, edit, read, edit: the same read between real edits
        t = setup + [s.read("app.py")]
        for k in range(4 + i % 3):
            t += [
                s.edit("app.py", f"s.split(','){'' if k == 0 else f'  # v{k}'}", f"s.split(',')  # v{k + 1}"),
                s.read("app.py"),
            ]
        return _run(s, "the same read between edits that change the file", t + _fix(s)[1:] + [s.end()])
    raise ValueError(kind)


KINDS = {
    "testfix": 6,
    "poll": 6,
    "flaky": 5,
    "guard": 4,
    "asked": 4,
    "investigate": 5,
    "exitok": 6,
    "subagent": 5,
    "oneretry": 4,
    "onecompact": 3,
    "long": 4,
    "todos": 4,
    "reasoning": 3,
    "longanswer": 3,
    "retimeout": 3,
    "rereads": 3,
}


def healthy_runs(project: str) -> list[Run]:
    return [_healthy(kind, i, project) for kind, n in KINDS.items() for i in range(n)]
