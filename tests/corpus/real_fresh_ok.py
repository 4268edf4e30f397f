# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Fresh held-out healthy runs that look like trouble (hard negatives), in the shapes of
`real_fresh.py`: workdir, offsets, include filters, several calls in one answer, subagents
that nest, one failing webfetch or skill, a revert that is then redone, polling that ends late."""

from __future__ import annotations

from typing import Any

from real_fresh import FreshSteps
from real_healthy import FIXED
from real_stuck import APP, CHECK

__all__ = ["fresh_healthy_runs"]

Run = dict[str, Any]
Turn = dict[str, Any]


def _run(s: FreshSteps, note: str, turns: list[Turn], **extra: Any) -> Run:
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": "Fix the parser so the check passes.",
        "script": {"turns": turns},
        **extra,
    }


def _fix(s: FreshSteps) -> Turn:
    return s.edit("app.py", "return s.split(',')", "return [x.strip() for x in s.split(',')]")


def _ok(kind: str, i: int, project: str) -> Run:
    s = FreshSteps(f"fr_ok_{kind}_{i:02d}", project)
    setup = s.setup({"app.py": APP})
    chk = s.sh(CHECK)
    if kind == "testfix":  # the check three times, each after a real edit, through workdir
        t = setup + s.look(1 + i) + [chk, _fix(s), dict(chk)]
        t += [s.edit("app.py", "def parse(s):", "def parse(s: str) -> list[str]:"), dict(chk)]
        return _run(s, "check, fix, check, annotate, check", t + [s.end()])
    if kind == "poll":  # a job that needs many polls, each one shows a new step
        n, f = 9 + 2 * i, "job.step"
        poll = (
            f"sleep 0.2; k=$(( $(cat {f} 2>/dev/null || echo 0) + 1 )); echo $k > {f}; "
            f'[ $k -ge {n} ] && echo done || echo "step $k/{n}"'
        )
        t = setup + [s.sh(poll, talk=k % 4 == 0) for k in range(n)]
        return _run(s, "polling that ends late, every poll showing progress", t + [s.end("The job is done.")])
    if kind == "parallel":  # several different calls per answer, then the fix
        t = setup + [
            s.calls(s.read_at("app.py", 0), s.grep_in("split", "*.py"), s.glob("*.py"), text="All three.")
        ]
        t += [s.calls(s.sh("python3 -V"), s.sh("ls -1")), _fix(s), chk]
        return _run(s, "several calls in one answer", t + [s.end()])
    if kind == "nested":  # a subagent that starts its own subagent
        inner = {"turns": s.look(2) + [s.end("Commas only.")]}
        outer = {"turns": [s.task("inner", "Look at the split"), s.end("The split keeps spaces.")]}
        outer["turns"][0]["tool_calls"][0]["arguments"]["subagent_type"] = "general"
        t = setup + [
            s.call(
                "task",
                {
                    "description": "Study the parser",
                    "subagent_type": "nester",
                    "prompt": f"Study the parser. [run {s.name}/outer]",
                },
            )
        ]
        t += [_fix(s), chk]
        return _run(s, "a subagent that starts its own", t + [s.end()], subs={"outer": outer, "inner": inner})
    if kind == "onefail":  # one failing webfetch or skill, then on with the work
        bad = s.fetch("http://127.0.0.1:9/docs") if i % 2 else s.call("skill", {"name": "no-such-skill"})
        t = setup + [bad] + s.look(2) + [_fix(s), chk]
        return _run(s, "one call that fails, then real work", t + [s.end()])
    if kind == "revert":  # an edit, its revert, then the right edit: undo once, not a loop
        e1 = s.edit("app.py", "s.split(',')", "s.split(', ')")
        e2 = s.edit("app.py", "s.split(', ')", "s.split(',')")
        t = setup + [s.read_at("app.py", 0), e1, chk, e2, _fix(s), dict(chk)]
        return _run(s, "an edit reverted once, then the right one", t + [s.end()])
    if kind == "pages":  # a long file read page by page, then edited
        body = "".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(60))
        t = setup + [s.write("big.py", body)] + [s.read_at("big.py", 20 * k, 20) for k in range(6)]
        t += [s.edit("big.py", "return x + 7\n", "return x + 70\n"), _fix(s), chk]
        return _run(s, "a long file read page by page, then edits", t + [s.end()])
    if kind == "exitok":  # exit codes that mean success, through workdir, mixed with real work
        cmds = [
            "grep -q nothing app.py",
            "diff -q app.py app.orig.py",
            "test -d build",
            "git diff --no-index --exit-code app.py app.orig.py",
            "cmp app.py app.orig.py",
        ]
        t = setup + [s.write("app.orig.py", FIXED)] + [s.sh(c) for c in cmds[: 3 + i % 3]] + [_fix(s), chk]
        return _run(s, "exit codes that mean no match or a difference", t + [s.end()])
    if kind == "retimeout":  # a command that hits its timeout, then another approach
        t = setup + [s.sh("sleep 4 && echo built", timeout=1200), s.sh("echo built fast"), _fix(s), chk]
        return _run(s, "a command hits its timeout, another way works", t + [s.end()])
    if kind == "retries":  # two provider retries far apart, work between
        err = {"http_error": [503, 529][i % 2], "message": "Overloaded", "headers": {"retry-after-ms": "150"}}
        t = setup + [dict(err)] + s.look(3) + [_fix(s), dict(err), chk]
        return _run(s, "two single provider retries far apart", t + [s.end()])
    if kind == "samesay":  # the same short line before several different calls
        t = setup + [
            {"text": "Checking.", **s.read_at("app.py", 0, 10, False)},
            {"text": "Checking.", **s.grep_in("split", "*.py", False)},
            {"text": "Checking.", **s.sh("python3 -V", talk=False)},
            _fix(s),
            chk,
        ]
        return _run(s, "the same short line before different calls", t + [s.end()])
    if kind == "thinkfirst":  # one empty answer with long reasoning, then the work
        t = setup + [{"reasoning": "Weighing strip versus a regex. " * 20, "finish_reason": "tool_calls"}]
        t += s.look(2) + [_fix(s), chk]
        return _run(s, "one answer of only reasoning, then the work", t + [s.end()])
    if kind == "report":  # a long final report of distinct lines that finishes
        lines = [
            f"- `{m}.py` line {k * 3 + 1}: {w}"
            for k, (m, w) in enumerate(
                (m, w)
                for m in ("app", "cli", "io")
                for w in ("ok", "renamed", "typed", "tested", "moved", "split")
            )
        ]
        t = setup + s.look(2) + [_fix(s), chk, {"text": "Report:\n" + "\n".join(lines * 2)}]
        return _run(s, "a long report of similar lines that finishes", t)
    if kind == "longrun":  # a long run: look, write, check, many times
        t = setup
        for k in range(6 + i):
            t += [
                s.grep_in(f"v{k}", "*.py"),
                s.write(f"part_{k}.py", f"V{k} = {k}\n"),
                s.sh(f"python3 -c 'import part_{k}'"),
            ]
        return _run(s, "a long run that keeps writing files and checking them", t + [_fix(s), chk, s.end()])
    raise ValueError(kind)


KINDS = {
    "testfix": 3,
    "poll": 3,
    "parallel": 2,
    "nested": 2,
    "onefail": 2,
    "revert": 2,
    "pages": 2,
    "exitok": 2,
    "retimeout": 2,
    "retries": 2,
    "samesay": 2,
    "thinkfirst": 2,
    "report": 2,
    "longrun": 2,
}


def fresh_healthy_runs(project: str) -> list[Run]:
    return [_ok(kind, i, project) for kind, n in KINDS.items() for i in range(n)]
