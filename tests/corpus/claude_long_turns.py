"""Claude Code scenarios of long answers and denied tools, for the real CLI and the fake API.

Two patterns the first Claude runs lacked, with healthy runs of the same shape beside them:

- answers cut by the output limit (`max_tokens`): the CLI asks the model to resume ("Output
  token limit hit. Resume directly ...", a synthetic user message) and, once the answers have
  used the output budget, ends the run with a `max_output_tokens` API error. Stuck: a plan
  pasted over and over inside each answer (turn_repetition), the same answer again after each
  resume (monologue), different text cut until the CLI gives up (output_limit). Healthy: a long
  answer that finishes, one cut that is resumed and then carries on with the work.
- tools denied in print mode without `--dangerously-skip-permissions`: nobody can grant the
  ask, so the CLI denies it (a `permission_denied` line and an error result). Stuck: the model
  keeps trying writes and shell commands that are denied. Healthy: one denial, then the work
  is done with tools that need no permission.

This batch is split on its own (`record_real.split` over these runs only), so adding it did not
move any earlier run between the development and held-out sets.
"""

from __future__ import annotations

from typing import Any

from fake_api import Answer

__all__ = ["long_turn_runs"]

Run = dict[str, Any]
_ASK: list[str] = []  # no --dangerously-skip-permissions: in print mode every ask is denied
_PLANS = [
    "I will now rewrite the parser so that every field is stripped before it is returned.",
    "Next I am going to add a test for the case with spaces after the commas in the input.",
    "The fix is to call strip on each piece after splitting the line on commas and then return it.",
]


def _bash(cmd: str, what: str = "Run it") -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": cmd, "description": what})


def _look(k: int, offset: int = 0) -> list[Answer]:
    cmds = ["ls -la", "cat README.md", "git status --short", "wc -l calc.py", "head -n 3 calc.py"]
    talk = ("Looking.", "", "Next.")
    return [Answer(talk[i % 3], tools=[_bash(cmds[(i + offset) % len(cmds)])]) for i in range(k)]


def _run(name: str, label: str, note: str, main: list[Answer], begins: int, **extra: Any) -> Run:
    return {"name": name, "label": label, "note": note, "main": main, "begins": begins, **extra}


def _prose(seed: int, sentences: int) -> str:
    """Text with no sentence said twice: a long answer that is not repeating itself."""
    words = ["parser", "field", "comma", "test", "input", "suite", "split", "line", "value", "case"]
    return " ".join(
        f"Point {seed}.{j}: the {words[(seed + j) % 10]} and the {words[(seed * 3 + j * 7) % 10]} "
        f"need care in step {j} of part {seed}."
        for j in range(sentences)
    )


def _cut(text: str, tokens: int) -> Answer:
    return Answer(text, output_tokens=tokens, stop="max_tokens")


def _stuck() -> list[Run]:
    runs: list[Run] = []
    for i in range(3):  # a plan pasted over and over inside each answer, cut, resumed, pasted again
        pre = _look(i + 1, i)
        tokens = (32000, 43000, 64000)[i]
        pasted = " ".join([_PLANS[i]] * (30 + 10 * i))
        loop = [_cut(pasted, tokens) for _ in range(6)]
        note = "a plan pasted over and over inside each answer until the output limit, resumed, pasted again"
        runs.append(
            _run(
                f"cc_paste_{i:02d}",
                "turn_repetition",
                note,
                [*pre, *loop],
                len(pre),
                also=["output_limit", "monologue"],
            )
        )
    for i in range(3):  # the same answer again after every resume
        pre = _look(2 - i % 2, i + 2)
        same = _prose(40 + i, 25 + 5 * i)
        loop = [_cut(same, (32000, 43000, 64000)[i]) for _ in range(6)]
        runs.append(
            _run(
                f"cc_again_{i:02d}",
                "monologue",
                "the same long answer after every resume until the CLI gives up",
                [*pre, *loop],
                len(pre),
                also=["output_limit"],
            )
        )
    for i in range(3):  # different text each time, cut until the output budget is spent
        pre = _look(1 + i, i + 1)
        loop = [_cut(_prose(10 * i + k, 30 + k), (32000, 43000, 64000)[i]) for k in range(6)]
        runs.append(
            _run(
                f"cc_cutoff_{i:02d}",
                "output_limit",
                "answers cut by the output limit until the CLI gives up",
                [*pre, *loop],
                len(pre),
            )
        )
    denied = [
        ("Write", {"file_path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
        _bash("touch build.ok"),
        ("Edit", {"file_path": "calc.py", "old_string": "a + b", "new_string": "b + a"}),
        _bash("echo fixed > status.txt"),
        ("Write", {"file_path": "notes.txt", "content": "todo\n"}),
        _bash("mkdir -p out && cp calc.py out/"),
    ]
    for i in range(4):  # writes and shell commands denied one after another
        pre = _look(i % 3, i)
        n = 4 + i % 3
        loop = [
            Answer(("Trying that.", "", "Let me try another way.")[k % 3], tools=[denied[(k + i) % 6]])
            for k in range(n)
        ]
        runs.append(
            _run(
                f"cc_denied_{i:02d}",
                "permission_deadlock",
                "writes and commands denied again and again in print mode",
                [*pre, *loop, Answer("I do not have permission.")],
                len(pre),
                perms=_ASK,
            )
        )
    return runs


def _healthy() -> list[Run]:
    runs: list[Run] = []
    for i in range(3):  # a long answer that finishes
        main = [*_look(1 + i, i), Answer(_prose(70 + i, 40 + 20 * i), output_tokens=3000 + 2000 * i)]
        runs.append(_run(f"cc_ok_long_{i:02d}", "healthy", "a long answer that finishes", main, -1))
    for i in range(3):  # cut once, resumed, then the work goes on
        main = [
            *_look(1, i),
            _cut(_prose(80 + i, 35), 32000),
            Answer(_prose(90 + i, 5), tools=[("Write", {"file_path": "plan.md", "content": f"plan {i}\n"})]),
            Answer(tools=[_bash("cat plan.md")]),
            Answer("Done."),
        ]
        runs.append(
            _run(
                f"cc_ok_resumed_{i:02d}",
                "healthy",
                "one answer cut by the limit, resumed, then the work goes on",
                main,
                -1,
            )
        )
    for i in range(3):  # one denial, then done with tools that need no permission
        main = [
            *_look(1, i),
            Answer("Writing the notes.", tools=[("Write", {"file_path": "notes.txt", "content": "x\n"})]),
            Answer("I cannot write here; reading instead.", tools=[("Read", {"file_path": "calc.py"})]),
            Answer(tools=[("Grep", {"pattern": "def ", "path": "."})]),
            Answer("calc.py defines add(a, b); no change is needed."),
        ]
        runs.append(
            _run(
                f"cc_ok_denied_once_{i:02d}",
                "healthy",
                "one write denied, then the answer from reading",
                main,
                -1,
                perms=_ASK,
            )
        )
    for i in range(2):  # the same short line between different answers is not a monologue
        main = [
            *_look(1, i),
            Answer("Checking the file now.", tools=[_bash("cat calc.py")]),
            Answer(_prose(60 + i, 12), tools=[_bash("wc -c calc.py")]),
            Answer("Checking the file now.", tools=[_bash("git log --oneline -1 || true")]),
            Answer("Done."),
        ]
        runs.append(_run(f"cc_ok_varied_{i:02d}", "healthy", "long and short answers that differ", main, -1))
    return runs


def long_turn_runs() -> list[Run]:
    return [*_stuck(), *_healthy()]
