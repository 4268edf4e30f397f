# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Development runs for the lag of the thrash and of `no_progress` (`tests/corpus/real/dev/`).

Written to tune on, after the fifth held-out set was frozen: thrashes (the same failing check
after edits it cannot see), stretches without progress, and the healthy runs most like them (a
slow build polled, a long search, the same failure a few times before the fix). They go to the
development set whole (no split: the held-out sets already hold these patterns).
"""

from __future__ import annotations

from typing import Any

from real_steps import Steps
from real_stuck import APP, CHECK, _run

__all__ = ["lag_dev_runs"]

Run = dict[str, Any]
Turn = dict[str, Any]
_README = "# Parser\n\nSplits a line on commas.\n"


def _check(s: Steps) -> Turn:
    return s.bash(f"cd {s.rel} && {CHECK}")


def _tweak(s: Steps, k: int, kind: int) -> Turn:
    """An edit the check cannot see."""
    if kind == 0:
        return s.edit("app.py", "def parse(s):", f"def parse(s):  # v{k}")
    if kind == 1:
        return s.edit("README.md", "Splits a line", f"Splits a line ({k})")
    return s.edit("app.py", "    return s.split(',')", f"    return s.split(',')\n\n# note {k}")


def _thrash(i: int, project: str) -> Run:
    s = Steps(f"lg_thrash_{i:02d}", project)
    pre = s.setup({"app.py": APP, "README.md": _README}) + s.explore(s.rng.randrange(1, 4), ["app.py"])
    chk = _check(s)
    loop: list[Turn] = []
    for k in range(5 + i % 3):
        loop += [s.talk(dict(chk), 0.4, 0.3), _tweak(s, k, (k + i) % 3)]
        if i == 2 and k % 2:
            loop.append(s.grep("split"))
    note = ["a comment changed", "the readme changed", "edits here and there, a grep between"][i]
    return _run(
        s, "doom_loop", f"the same failing check after each small edit: {note}", pre, loop + [dict(chk)]
    )


def _noprog(i: int, project: str) -> Run:
    s = Steps(f"lg_noprog_{i:02d}", project)
    pre = s.setup({"app.py": APP, "README.md": _README})
    if i == 0:  # a build queue that never moves
        pre += [s.write("queue.txt", "queued\n")]
        loop = [s.bash(f"cd {s.rel} && sleep 0.3 && cat queue.txt", talk=k % 3 == 0) for k in range(14)]
        note = "polling a queue that never moves"
    elif i == 1:  # three files read in turn
        pool = [s.read("app.py"), s.read("README.md"), s.bash(f"cd {s.rel} && git status --short")]
        loop = [s.talk(dict(pool[k % 3]), 0.5, 0.3) for k in range(13)]
        note = "the same three look-ups in turn"
    else:  # a search, then the same search again
        look = s.explore(8, ["app.py", "README.md"])
        loop = look + [dict(look[k]) for k in (1, 4, 0, 6, 2)]
        note = "a search, then five of its look-ups again"
    return _run(s, "no_progress", note, pre, loop)


def _healthy(i: int, project: str) -> Run:
    s = Steps(f"lg_ok_{i:02d}", project)
    t = s.setup({"app.py": APP, "README.md": _README})
    chk = _check(s)
    fix = s.edit("app.py", "return s.split(',')", "return [x.strip() for x in s.split(',')]")
    if i == 0:  # four failures with small edits between, then the fix
        for k in range(4):
            t += [s.talk(dict(chk), 0.4, 0.3), _tweak(s, k, k % 3)]
        t += [fix, dict(chk)]
        note = "the same failure after small edits, then the fix"
    elif i == 1:  # a slow build polled, the same answer until done
        step = "k=$(( $(cat n.txt 2>/dev/null || echo 0) + 1 )); echo $k > n.txt; "
        poll = f"cd {s.rel} && sleep 0.3 && {step}[ $k -gt 10 ] && echo done || echo building"
        t += [s.bash(poll, talk=k % 4 == 0) for k in range(11)] + [fix, chk]
        note = "a slow build polled until done, then the fix"
    elif i == 2:  # a long search of different things
        t += s.explore(28, ["app.py", "README.md"]) + [fix, chk]
        note = "a search of 28 look-ups, then the fix"
    else:  # a search that goes back to three things
        look = s.explore(18, ["app.py", "README.md"])
        t += look[:6] + [dict(look[1])] + look[6:12] + [dict(look[3])] + look[12:] + [dict(look[8])]
        t += [fix, chk]
        note = "a search that goes back to three things, then the fix"
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": "Fix the parser so the check passes.",
        "script": {"turns": t + [s.end()]},
    }


def lag_dev_runs(project: str) -> list[Run]:
    runs = [_thrash(i, project) for i in range(3)] + [_noprog(i, project) for i in range(3)]
    return runs + [_healthy(i, project) for i in range(4)]
