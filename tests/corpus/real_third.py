# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of the third held-out set (`tests/corpus/real/third/`).

Written after `no_progress` learnt to call a stretch stuck sooner (the same answers again, the
same todo list rewritten), and before any detector ran on these runs, to measure that change on
runs nobody tuned on: stretches without progress in shapes no other set has, and the healthy
runs most like them (investigations that re-read a few things before the fix, todo lists kept
up to date while looking around, checks repeated between real edits, polls that end). The
whole set is held out.
"""

from __future__ import annotations

from typing import Any

from real_fresh import FreshSteps
from real_healthy import FIXED
from real_stuck import APP, CHECK, _run

__all__ = ["third_runs"]

Run = dict[str, Any]
Turn = dict[str, Any]
_NOTES = "# Notes\n\nThe parser splits on commas.\n"
_BIG = "".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(80))


def _pre(s: FreshSteps) -> list[Turn]:
    return s.setup({"app.py": APP, "NOTES.md": _NOTES}) + [s.grep_in("split", "*.py")]


def _stuck(i: int, project: str) -> Run:
    s = FreshSteps(f"th_noprog_{i:02d}", project)
    pre = _pre(s)
    if i == 0:  # back to the same six look-ups in a shuffled order, with words between
        pool = [
            s.read("app.py"),
            s.read("NOTES.md"),
            s.grep_in("parse", "*.py"),
            s.sh("wc -l app.py"),
            s.glob("**/*.md"),
            s.sh("head -n 1 app.py"),
        ]
        order = [0, 1, 2, 3, 4, 5, 2, 0, 4, 1, 5, 3, 0, 2, 1, 4, 3, 5]
        loop = [s.talk(dict(pool[k]), 0.6, 0.2) for k in order]
        note = "the same six look-ups, over and over in a shuffled order"
    elif i == 1:  # a five-item plan re-marked again and again, a look-up now and then
        items = ["reproduce", "read parser", "read notes", "fix split", "verify"]
        loop = []
        for k in range(12):
            states = ["completed" if j < k % 3 else "pending" for j in range(5)]
            order = items if k % 3 else items[::-1]
            loop.append(s.todo(list(zip(order, states if k % 3 else states[::-1], strict=True))))
            if k % 4 == 1:
                loop.append(s.read("app.py"))
        note = "a five-item plan re-marked again and again, no edit"
    elif i == 2:  # polling a lock that never goes away
        pre += [s.write("build.lock", "pid 4242\n")]
        loop = [
            s.sh(f"sleep 0.{k % 2 + 3}; ls build.lock && echo locked", talk=k % 6 == 0) for k in range(14)
        ]
        note = "waiting for a lock file that never goes away"
    elif i == 3:  # state checks in turn: git status, the file, its size, again and again
        pre += [s.sh("git init -q && git add -A && git -c user.name=d -c user.email=d@x commit -qm s")]
        checks = [
            s.sh("git status --short"),
            s.read("app.py"),
            s.sh("git diff --stat"),
            s.grep_in("strip", "*.py"),
        ]
        loop = [dict(checks[k % 4]) for k in range(6)]
        loop += [dict(checks[k]) for k in (2, 0, 3, 1, 0, 2, 1, 3, 0, 1)]
        note = "the same state checks, asked again in varying order"
    elif i == 4:  # pages of one long file read again and again, with greps between
        pre += [s.write("big.py", _BIG)]
        loop = []
        for k in range(16):
            loop.append(s.read_at("big.py", 40 * (k % 4), 40) if k % 3 else s.grep_in(f"f{k % 2}", "*.py"))
        note = "the same pages of one file, read again with greps between"
    elif i == 5:  # a long look around, a few different things, then the same ones again
        look = s.look(8)
        loop = look + [s.grep_in("comma", "*.md"), s.read("NOTES.md")] + [dict(t) for t in look[::2]]
        loop += [dict(look[1]), dict(look[3])]
        note = "a look around, then the same look-ups again without an edit"
    elif i == 6:  # a subagent reports, the parent then checks its report over and over
        head, subs = s.sub_first(3)
        asks = [
            s.read("app.py"),
            s.sh("python3 -c 'import app; print(app.parse(\"a, b\"))'"),
            s.read("NOTES.md"),
        ]
        loop = head + [s.talk(dict(asks[k % 3]), 0.3, 0.5) for k in range(14)]
        return _run(s, "no_progress", "the subagent's report checked over and over", pre, loop, subs=subs)
    else:  # a plan and the same two reads in turn
        items = ["read app", "read notes", "decide"]
        loop = []
        for k in range(8):
            loop.append(
                s.todo([(it, "in_progress" if j == k % 3 else "pending") for j, it in enumerate(items)])
            )
            loop.append(s.read(["app.py", "NOTES.md"][k % 2]))
        note = "the plan rewritten between the same two reads"
    return _run(s, "no_progress", note, pre, loop)


def _healthy(i: int, project: str) -> Run:
    s = FreshSteps(f"th_ok_{i:02d}", project)
    setup = s.setup({"app.py": APP, "NOTES.md": _NOTES})
    chk = s.sh(CHECK)
    fix = s.edit("app.py", "return s.split(',')", "return [x.strip() for x in s.split(',')]")
    if i in (0, 1):  # a look around with a few re-reads, then the fix
        look = s.look(9)
        t = setup + look[:5] + [dict(look[0])] + look[5:] + [dict(look[2]), dict(look[4])] + [fix, chk]
        note = "a look around that goes back to three things, then the fix"
    elif i in (2, 3):  # a todo list kept up to date while looking around, then the work
        items = ["read parser", "read notes", "read tests", "fix split"]
        t = setup + [s.todo([(it, "pending") for it in items])]
        for k in range(3):
            t += s.look(2) if k != 1 else [s.read("NOTES.md"), s.grep_in("comma", "*.md")]
            t.append(s.todo([(it, "completed" if j <= k else "pending") for j, it in enumerate(items)]))
        t += [fix, chk, s.todo([(it, "completed") for it in items])]
        note = "a todo list marked as the look around goes, then the fix"
    elif i in (4, 5):  # the check again after each of several edits that each change something
        t = setup + [chk, s.read("app.py"), fix, dict(chk)]
        t += [s.edit("app.py", "def parse(s):", "def parse(s: str) -> list[str]:"), dict(chk)]
        t += [s.edit("app.py", "for x in s.split", "for x in (s or '').split"), dict(chk), s.read("app.py")]
        note = "the same check after each real edit"
    elif i in (6, 7):  # a lock that goes away after a few polls
        n = 5 + i
        poll = (
            "sleep 0.3; k=$(( $(cat n.txt 2>/dev/null || echo 0) + 1 )); echo $k > n.txt; "
            f"[ $k -ge {n} ] && echo free || echo locked"
        )
        t = setup + [s.sh(poll, talk=k % 5 == 0) for k in range(n)] + [fix, chk]
        note = "polling a lock until it is free, then the fix"
    elif i in (8, 9):  # a long file paged through once, a page read again before the edit
        t = setup + [s.write("big.py", _BIG)] + [s.read_at("big.py", 40 * k, 40) for k in range(5)]
        t += [s.read_at("big.py", 40, 40), s.grep_in("def f7", "*.py"), fix, chk]
        note = "one long file paged through, one page read again, then the fix"
    elif i in (10, 11):  # a subagent looks, the parent reads what it named, re-reads one, then fixes
        head, subs = s.sub_first(3)
        t = (
            setup
            + head
            + [s.read("app.py"), s.read("NOTES.md"), s.grep_in("split", "*.py"), s.read("app.py")]
        )
        t += [s.write("app.py", FIXED), chk]
        return _run_ok(s, "a subagent's report read through, then the fix", t + [s.end()], subs=subs)
    else:  # a failing check, two reads, the same failing check, a closer read, the fix
        t = setup + [chk, s.read("app.py"), s.grep_in("split", "*.py"), dict(chk)]
        t += [s.read_at("app.py", 0, 5), fix, dict(chk)]
        note = "the failing check run twice while reading, then the fix"
    return _run_ok(s, note, t + [s.end()])


def _run_ok(s: FreshSteps, note: str, turns: list[Turn], **extra: Any) -> Run:
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": "Fix the parser so the check passes.",
        "script": {"turns": turns},
        **extra,
    }


def third_runs(project: str) -> list[Run]:
    return [_stuck(i, project) for i in range(8)] + [_healthy(i, project) for i in range(13)]
