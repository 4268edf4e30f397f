# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of the fourth held-out set (`tests/corpus/real/fourth/`): the thrash.

The Claude Code field forms hold a rebuild-and-retry thrash (the same failure after each small
edit) and its healthy twin (the build failing four times, then passing), written from what users
published; no recording of a real `opencode serve` held that form. These runs do: the same
failing check after each edit that changes nothing the check sees (a comment, another file, a
line the test never reaches), and the healthy runs most like them (small edits between the same
failure, then the real fix; the check moving as the fix takes shape). Written, recorded and
frozen after the thresholds of the lag work were set, before any detector ran on them: the
whole set is held out.
"""

from __future__ import annotations

from typing import Any

from real_fresh import FreshSteps
from real_healthy import FIXED
from real_stuck import APP, CHECK, _run

__all__ = ["fourth_runs"]

Run = dict[str, Any]
Turn = dict[str, Any]
_NOTES = "# Notes\n\nThe parser splits on commas.\n"


def _small_edit(s: FreshSteps, k: int, where: int) -> Turn:
    """An edit the check cannot see: a comment, a note, a line past the return."""
    if where == 0:
        return s.edit("app.py", "def parse(s):", f"# attempt {k}\ndef parse(s):")
    if where == 1:
        return s.edit("NOTES.md", "The parser splits on commas.", f"The parser splits on commas.\nTry {k}.")
    return s.edit("app.py", "    return s.split(',')", f"    return s.split(',')\n    # unreachable {k}")


def _stuck(i: int, project: str) -> Run:
    s = FreshSteps(f"fo_thrash_{i:02d}", project)
    pre = s.setup({"app.py": APP, "NOTES.md": _NOTES}) + s.look(s.rng.randrange(1, 4))
    chk = s.sh(CHECK)
    tries = 5 + i % 3
    loop: list[Turn] = []
    for k in range(tries):
        loop.append(s.talk(dict(chk), 0.4, 0.3))
        if i == 3 and k % 2:  # a look between, now and then
            loop.append(s.read("app.py"))
        loop.append(_small_edit(s, k, (k + i) % 3 if i >= 2 else i))
    notes = [
        "the same failing check after each comment added",
        "the same failing check after each change to the notes",
        "the same failing check after small edits here and there",
        "the same failing check after small edits, a read between",
    ]
    return _run(
        s, "doom_loop", notes[i], pre, loop + [dict(chk), s.end("It still fails.")], also=["retry_cascade"]
    )


def _healthy(i: int, project: str) -> Run:
    s = FreshSteps(f"fo_ok_{i:02d}", project)
    t = s.setup({"app.py": APP, "NOTES.md": _NOTES}) + s.look(s.rng.randrange(1, 4))
    chk = s.sh(CHECK)
    fix = s.edit("app.py", "return s.split(',')", "return [x.strip() for x in s.split(',')]")
    if i in (0, 1):  # three or four failures with small edits between, then the fix
        for k in range(3 + i):
            t += [s.talk(dict(chk), 0.4, 0.3), _small_edit(s, k, k % 3)]
        t += [fix, dict(chk)]
        note = "the same failure after small edits, then the fix"
    elif i in (2, 3):  # the answer moves as the fix takes shape
        t += [chk, s.edit("app.py", "return s.split(',')", "return s.split(';')"), dict(chk)]
        t += [s.write("app.py", FIXED), dict(chk)]
        note = "the check fails differently after each edit, then passes"
    else:  # a failure, a comment, the same failure, a closer read, the fix
        t += [chk, _small_edit(s, 0, 0), dict(chk), s.read_at("app.py", 0, 5), fix, dict(chk)]
        note = "the same failure twice, a read, then the fix"
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": "Fix the parser so the check passes.",
        "script": {"turns": t + [s.end()]},
    }


def fourth_runs(project: str) -> list[Run]:
    return [_stuck(i, project) for i in range(4)] + [_healthy(i, project) for i in range(5)]
