# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""More stuck scenarios: no progress, monologue, empty turns, silent stop, compaction loop,
output limit, repetition inside one turn, and a command that hits its timeout before a stall."""

from __future__ import annotations

from typing import Any

from real_steps import Steps
from real_stuck import _pre, _run

__all__ = ["more_stuck_runs"]

Run = dict[str, Any]
_PLAN = [
    "First I will read the parser module to understand the input format.",
    "Then I will write a test that covers the failing case with spaces after commas.",
    "After that I will change the split to strip each field.",
    "Finally I will run the whole suite and check nothing else broke.",
]
_OVERFLOW = {
    "http_error": 400,
    "body": {
        "error": {
            "message": "This model's maximum context length is 200000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
}


def no_progress(i: int, project: str) -> Run:
    s = Steps(f"noprog_{i:02d}", project)
    pre = _pre(s, 1)
    kind = i % 4
    if kind == 0:  # a long investigation that never edits anything, some calls made twice
        calls = s.explore(16 + i, ["app.py", "README.md"])
        loop = calls + [dict(calls[k]) for k in range(0, 12, 2)]
        s.rng.shuffle(loop)
        note = "a long investigation that never edits anything"
    elif kind == 1:  # sleep-polling a status that never changes
        pre += [s.write("status.txt", "state: pending\n")]
        loop = [
            s.bash(f"sleep 0.{2 + k % 3}; cat {s.rel}/status.txt", talk=k % 4 == 0)
            for k in range(12 + i // 2)
        ]
        note = "polling a status that never changes"
    elif kind == 2:  # a todo list churned without edits
        items = ["read parser", "write test", "fix split", "run suite"]
        loop = []
        for k in range(10 + i // 2):
            states = [
                "completed" if j < k % 3 else ("in_progress" if j == k % 3 else "pending") for j in range(4)
            ]
            loop.append(s.todo(list(zip(items if k % 2 else items[::-1], states, strict=True))))
            if k % 3 == 2:
                loop.append(s.read("app.py"))
        note = "a todo list churned without edits"
    else:  # round-robin reads of the same few files in varying order
        files = ["app.py", "README.md", "status.txt"]
        pre += [s.write("status.txt", "ok\n")]
        loop = [
            s.read(files[(k * 7 + k // 3) % 3]) if k % 2 else s.grep(["split", "parse", "strip"][k % 3])
            for k in range(20)
        ]
        note = "the same few files read over and over in varying order"
    return _run(s, "no_progress", note, pre, loop)


def monologue(i: int, project: str) -> Run:
    s = Steps(f"monologue_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    line = s.rng.choice(
        [
            "I will now fix the parser.",
            "Let me run the tests to confirm.",
            "Next step: update the split call.",
            "I need to check the input format first.",
        ]
    )
    forms = [line, line + " ", line.replace(" ", "  ", 1), line]
    loop = [
        {
            "text": forms[k % len(forms)],
            "finish_reason": "tool_calls",
            **({"reasoning": "again"} if i % 3 == 0 else {}),
        }
        for k in range(5 + i % 2)
    ]
    return _run(s, "monologue", "the same sentence with no tool call between", pre, loop)


def empty(i: int, project: str) -> Run:
    s = Steps(f"empty_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    loop = [
        {
            "reasoning": s.rng.choice(["Thinking about the parser.", "Considering the split.", "Hmm."]),
            "finish_reason": "tool_calls",
        }
        if i % 3
        else {"finish_reason": "tool_calls"}
        for _ in range(6 + i % 3)
    ]
    return _run(s, "empty_reasoning", "turns with nothing but reasoning, again and again", pre, loop)


def silent(i: int, project: str) -> Run:
    s = Steps(f"silent_{i:02d}", project)
    pre = _pre(s, 1 + s.rng.randrange(0, 6))
    if i % 2:
        pre += [s.read("app.py"), s.edit("app.py", "s.split(',')", "s.split(',')  # TODO")]
    last = {"reasoning": "I should run the check now."} if i % 3 == 0 else {}
    return _run(
        s,
        "silent_stop",
        "the last turn is empty and the session stops",
        pre,
        [{**last, "finish_reason": "stop"}],
    )


def compaction(i: int, project: str) -> Run:
    s = Steps(f"compact_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    loop = [dict(_OVERFLOW) for _ in range(3 + i % 2)]
    return _run(
        s, "compaction_loop", "the context overflows again right after each compaction", pre, loop + [s.end()]
    )


def output_limit(i: int, project: str) -> Run:
    s = Steps(f"outlimit_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 5))
    steps = [
        f"{k + 1}. {s.rng.choice(['Update', 'Check', 'Rename', 'Move', 'Test'])} the "
        f"{s.rng.choice(['parser', 'config loader', 'CLI', 'writer', 'cache'])} ({k * 7 % 13} call sites)."
        for k in range(60 + 10 * i)
    ]
    text = "Here is the full plan before I start editing:\n" + "\n".join(steps)
    return _run(
        s,
        "output_limit",
        "a long answer cut by the output limit, nothing done",
        pre,
        [{"text": text, "finish_reason": "length"}],
    )


def repetition(i: int, project: str) -> Run:
    s = Steps(f"repeat_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 5))
    para = " ".join(_PLAN[: 2 + i % 3])
    sep = ["\n\n", "\n", " "][i % 3]
    text = "Plan:" + sep + sep.join([para] * (12 + i))
    finish = "length" if i % 4 else "stop"
    also = ["output_limit"] if finish == "length" else []
    return _run(
        s,
        "turn_repetition",
        "one long turn repeating the same plan",
        pre,
        [{"text": text, "finish_reason": finish}],
        also=also,
    )


def timeout(i: int, project: str) -> Run:
    s = Steps(f"timeout_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(0, 4))
    git = "git -c user.name=dev -c user.email=dev@example.com"
    pre.append(s.bash(f"cd {s.rel} && git init -q && git add -A && {git} commit -qm start"))
    cmd = [
        f"{git} commit --allow-empty",
        f"{git} tag -a v0.{i}",
        f"{git} commit --allow-empty --amend",
        "vim NOTES.md",
        f"{git} rebase -i --root",
    ][i % 5]
    call = s.bash(f"cd {s.rel} && {cmd}", timeout=2000 + 500 * (i % 3))
    # the next model step never comes back: the driver gives up on it
    return _run(
        s,
        "command_timeout",
        "an interactive command hits the timeout, then the run stalls",
        pre,
        [call, {"delay": 120, "text": "never"}],
        abort_after=5 + i % 4,
    )


def more_stuck_runs(project: str) -> list[Run]:
    runs = [no_progress(i, project) for i in range(11)]
    runs += [monologue(i, project) for i in range(10)]
    runs += [empty(i, project) for i in range(10)]
    runs += [silent(i, project) for i in range(10)]
    runs += [compaction(i, project) for i in range(10)]
    runs += [output_limit(i, project) for i in range(10)]
    runs += [repetition(i, project) for i in range(10)]
    runs += [timeout(i, project) for i in range(10)]
    return runs
