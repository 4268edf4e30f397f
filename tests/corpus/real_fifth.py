# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of the fifth held-out set (`tests/corpus/real/fifth/`): the thrash and the
stretch without progress, with the healthy runs that grind longest.

Written, recorded and frozen before any detector changed for the lag of these two patterns,
and before any detector ran on them: the same failing check after edits it cannot see (in new
shapes: the check and the edit in one answer, a docstring, another file, a check script), a
stretch without progress (a build status that never moves, reads in turn, a search asked
again, a plan rewritten, pages of one file), and the healthy runs most like them: a running
build polled until it is done, with and without progress lines, searches of thirty and more
calls that end in the fix, the same failure a few times and then the fix. The whole set is
held out.
"""

from __future__ import annotations

from typing import Any

from real_fresh import FreshSteps
from real_stuck import APP, CHECK, _run

__all__ = ["fifth_runs"]

Run = dict[str, Any]
Turn = dict[str, Any]
_NOTES = "# Notes\n\nThe parser splits on commas.\n"
_CONF = "[parser]\nsep = ,\n"
_CHECK_SH = f"#!/bin/sh\n{CHECK}\n"
_BIG = "".join(f"def g{k}(x):\n    return x * {k}\n" for k in range(90))
_WORDS = [
    "split", "strip", "parse", "comma", "sep", "join", "list", "return", "def ", "import",
    "TODO", "FIXME", "class ", "self", "assert", "raise", "open", "json", "path", "config",
    "test", "main", "args", "print", "lambda", "yield", "with ", "except", "None", "True",
    "False", "format", "encode", "decode", "lines", "mapping", "filter", "sorted", "dict", "setdefault",
]  # fmt: skip
_FIX = ("return s.split(',')", "return [x.strip() for x in s.split(',')]")


def _files(s: FreshSteps) -> list[Turn]:
    return s.setup({"app.py": APP, "NOTES.md": _NOTES, "parser.ini": _CONF, "check.sh": _CHECK_SH})


def _unseen_edit(s: FreshSteps, k: int, kind: int) -> Turn:
    """An edit the check cannot see: a docstring, the config the code never reads, a comment."""
    if kind == 0:
        return s.edit("app.py", "def parse(s):", f'def parse(s):\n    """Split a line (try {k})."""')
    if kind == 1:
        return s.edit("parser.ini", "sep = ,", f"sep = ,\n# try {k}")
    return s.edit("NOTES.md", "# Notes", f"# Notes (attempt {k})")


def _thrash(i: int, project: str) -> Run:
    s = FreshSteps(f"fi_thrash_{i:02d}", project)
    pre = _files(s) + s.look(s.rng.randrange(1, 3))
    chk = s.sh("sh check.sh") if i == 3 else s.sh(CHECK)
    loop: list[Turn] = []
    if i == 0:  # the check and the edit in one answer, six times
        for k in range(6):
            loop.append(s.calls(dict(chk), _unseen_edit(s, k, k % 3), text="Trying another tweak."))
        note = "the same failing check and a small edit in each answer"
    elif i == 1:  # a docstring rewritten between the same failure
        for k in range(6):
            loop += [s.talk(dict(chk), 0.5, 0.3), _unseen_edit(s, k, 0)]
        note = "the same failing check after each docstring change"
    elif i == 2:  # the config the code never reads, a grep between
        for k in range(5):
            loop += [dict(chk), s.grep_in("sep", "*.ini"), _unseen_edit(s, k, 1)]
        note = "the same failing check after each change to a config the code never reads"
    elif i == 3:  # a check script, seven tries, edits here and there
        for k in range(7):
            loop += [s.talk(dict(chk), 0.3, 0.4), _unseen_edit(s, k, (k + 1) % 3)]
        note = "the same failing check script after small edits here and there"
    else:  # five tries, a read now and then, the notes edited
        for k in range(5):
            loop += [dict(chk)] + ([s.read("app.py")] if k % 2 else []) + [_unseen_edit(s, k, 2)]
        note = "the same failing check after each change to the notes, a read between"
    post = [dict(chk), s.end("It still fails the same way.")]
    return _run(s, "doom_loop", note, pre, loop + post, also=["retry_cascade"])


def _noprog(i: int, project: str) -> Run:
    s = FreshSteps(f"fi_noprog_{i:02d}", project)
    pre = _files(s) + [s.grep_in("parse", "*.py")]
    if i == 0:  # a build status that never moves
        pre += [s.write("status.txt", "running\n")]
        loop = [s.sh(f"sleep 0.{3 + k % 3}; cat status.txt", talk=k % 4 == 0) for k in range(15)]
        note = "polling a build status that never changes"
    elif i == 1:  # four files read in turn, words between
        pool = [s.read("app.py"), s.read("NOTES.md"), s.read("parser.ini"), s.read("check.sh")]
        loop = [s.talk(dict(pool[k % 4]), 0.5, 0.3) for k in range(14)]
        note = "the same four files read in turn, no edit"
    elif i == 2:  # a search of ten things, then six of them asked again
        look = [s.grep_in(w, "*") for w in _WORDS[:10]]
        loop = look + [dict(look[k]) for k in (3, 0, 7, 1, 5, 2)]
        note = "a search of ten look-ups, then six of them asked again"
    elif i == 3:  # the same plan rewritten with a read between
        items = ["reproduce", "read the parser", "read the config", "fix"]
        loop = []
        for k in range(9):
            loop.append(
                s.todo([(it, "in_progress" if j == k % 2 else "pending") for j, it in enumerate(items)])
            )
            if k % 3 == 2:
                loop.append(s.read(["app.py", "parser.ini"][k % 2]))
        note = "the same plan rewritten, a read between now and then"
    else:  # two pages of one long file, read again with a count between
        pre += [s.write("big.py", _BIG)]
        loop = []
        for k in range(14):
            loop.append(s.sh("wc -l big.py") if k % 5 == 4 else s.read_at("big.py", 60 * (k % 2), 60))
        note = "the same two pages of one file, read again and again"
    return _run(s, "no_progress", note, pre, loop)


def _poll_build(s: FreshSteps, n: int, progress: bool) -> list[Turn]:
    """A build still running for `n` polls (the same answer, or a progress line), then done."""
    step = "k=$(( $(cat n.txt 2>/dev/null || echo 0) + 1 )); echo $k > n.txt; "
    busy = f'echo "built $k of {n} modules"' if progress else "echo running"
    poll = f"sleep 0.4; {step}[ $k -gt {n} ] && echo 'build ok' || {busy}"
    return [s.sh(poll, talk=k % 5 == 0) for k in range(n + 1)]


def _healthy(i: int, project: str) -> Run:
    s = FreshSteps(f"fi_ok_{i:02d}", project)
    t = _files(s)
    chk = s.sh(CHECK)
    fix = s.edit("app.py", *_FIX)
    if i == 0:  # the same failure after three small edits, then the fix
        t += s.look(2)
        for k in range(3):
            t += [s.talk(dict(chk), 0.4, 0.3), _unseen_edit(s, k, k % 3)]
        t += [dict(chk), fix, dict(chk)]
        note = "the same failure after three small edits, then the fix"
    elif i == 1:  # the check and an edit in one answer, three times, then the fix with the check
        for k in range(3):
            t.append(s.calls(dict(chk), _unseen_edit(s, k, (k + 1) % 3), text="Another try."))
        t += [s.calls(dict(chk), fix), dict(chk)]
        note = "the check and a small edit in one answer, then the fix"
    elif i == 2:  # a check script failing the same way four times while reading, then the fix
        sh = s.sh("sh check.sh")
        t += [sh, s.read("app.py"), dict(sh), _unseen_edit(s, 0, 1), dict(sh), s.grep_in("split", "*.py")]
        t += [dict(sh), s.read("check.sh"), fix, dict(sh)]
        note = "the check script failing four times while reading, then the fix"
    elif i in (3, 4):  # a running build polled until it is done, then the fix
        t += [s.sh("echo started > build.log")] + _poll_build(s, 8 + 2 * (i - 3), progress=False)
        t += [s.read("build.log"), fix, chk]
        note = "a running build polled until it is done, then the fix"
    elif i == 5:  # a long build with progress lines
        t += _poll_build(s, 18, progress=True) + [fix, chk]
        note = "a long build polled with a progress line, then the fix"
    elif i in (6, 7):  # a search of thirty and more different look-ups, then the fix
        n = 30 + 10 * (i - 6)
        t += [s.grep_in(w, "*.py" if k % 2 else "*") for k, w in enumerate(_WORDS[:n])]
        t += [s.read("app.py"), fix, chk]
        note = f"a search of {n} different look-ups, then the fix"
    else:  # a long search that goes back to four things, then the fix
        look = [s.grep_in(w, "*") for w in _WORDS[:32]]
        t += look[:10] + [dict(look[2])] + look[10:20] + [dict(look[5]), s.read("app.py")]
        t += look[20:] + [dict(look[12]), s.read("app.py"), fix, chk]
        note = "a search of 32 look-ups going back to four, then the fix"
    return {
        "name": s.name,
        "label": "healthy",
        "note": note,
        "begins": -1,
        "prompt": "Fix the parser so the check passes.",
        "script": {"turns": t + [s.end()]},
    }


def fifth_runs(project: str) -> list[Run]:
    runs = [_thrash(i, project) for i in range(5)] + [_noprog(i, project) for i in range(5)]
    return runs + [_healthy(i, project) for i in range(9)]
