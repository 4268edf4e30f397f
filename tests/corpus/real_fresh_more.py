# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Fresh held-out stuck runs, continued: no progress, monologue, empty turns, silent stop,
compaction loop, output limit and repetition inside one turn, five runs each."""

from __future__ import annotations

from typing import Any

from real_fresh import PER_PATTERN, FreshSteps, _pre
from real_stuck import _run
from real_stuck2 import _OVERFLOW

__all__ = ["more_fresh_stuck"]

Run = dict[str, Any]


def no_progress(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_noprog_{i:02d}", project)
    pre = _pre(s, 1)
    if i == 0:  # paging through one file by offset, then paging again
        loop = [s.read_at("app.py", k % 3, 5) for k in range(16)]
        note = "the same file paged through by offset, again and again"
    elif i == 1:  # waiting on a flag file that never appears, as one long command each time
        loop = [
            s.sh(f"sleep 0.{k % 3 + 2}; test -f done.flag && echo ready || echo waiting", talk=k % 5 == 0)
            for k in range(14)
        ]
        note = "waiting on a flag file that never appears"
    elif i == 2:  # a subagent looks around, then the parent greps the same few things over
        head, subs = s.sub_first(4)
        words = ["split", "strip", "parse", "comma", "token"]
        loop = head + [s.grep_in(words[k % 5], ["*.py", "*.md"][k % 2]) for k in range(18)]
        return _run(
            s, "no_progress", "greps of the same few words after a subagent's report", pre, loop, subs=subs
        )
    elif i == 3:  # a checklist rewritten with text between, never an edit
        items = ["reproduce", "find cause", "fix", "verify"]
        loop = []
        for k in range(12):
            states = ["in_progress" if j == k % 4 else "pending" for j in range(4)]
            loop.append(s.talk(s.todo(list(zip(items, states, strict=True)), False), 0.9, 0.1))
            if k % 4 == 3:
                loop.append(s.sh("git status --short"))
        note = "a checklist rewritten turn after turn, never an edit"
    else:  # status look-ups several at a time, nothing ever changes
        loop = [s.calls(s.sh("cat app.py"), s.glob("*.py"), text="Still looking.") for _ in range(4)]
        loop += [s.sh(c) for c in ("ls -1", "cat app.py", "ls -1", "wc -l app.py", "cat app.py", "ls -1")] * 2
        note = "the same look-ups, several at a time and one by one"
    return _run(s, "no_progress", note, pre, loop)


def monologue(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_monologue_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    line = [
        "Now I am going to run the full test suite to make sure the change works.",
        "OK.",
        "Let me think about what the parser should return for an empty string here.",
        "I'll apply the fix to app.py now.",
        "Continuing with the next step of the plan.",
    ][i]
    forms = [line, line.upper() if i == 1 else line, line + "\n", "  " + line]
    loop = [
        {"text": forms[k % 4], "finish_reason": "tool_calls", **({"reasoning": f"step {k}"} if i % 2 else {})}
        for k in range(4 + i % 3)
    ]
    return _run(s, "monologue", "the same words again with no tool call between", pre, loop)


def empty(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_empty_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    if i == 4:
        head, subs = s.sub_first(2)
        pre += head
    long = "I need to weigh the two options for the split before acting. " * (1 + 3 * (i % 2))
    loop = [
        {"reasoning": long, "finish_reason": "tool_calls"}
        if k % 2 or i == 0
        else {"finish_reason": "tool_calls"}
        for k in range(4 + i)
    ]
    note = "answers with no text and no call, reasoning or not"
    if i == 4:
        return _run(s, "empty_reasoning", note, pre, loop, subs=subs)
    return _run(s, "empty_reasoning", note, pre, loop)


def silent(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_silent_{i:02d}", project)
    pre = _pre(s, 2 + i)
    subs: dict[str, Any] = {}
    if i == 1:  # a failing call just before
        pre += [s.sh("python3 -m pytest -q")]
    elif i == 2:  # after a subagent's report
        head, subs = s.sub_first(2)
        pre += head
    elif i == 3:  # several calls in one answer just before
        pre += [s.calls(s.read_at("app.py", 0), s.grep_in("split", "*.py"), text="Reading both.")]
    last = {"reasoning": "Now run the check and then edit."} if i in (0, 3) else {}
    return _run(
        s,
        "silent_stop",
        "the last answer is empty and the session stops",
        pre,
        [{**last, "finish_reason": "stop"}],
        subs=subs,
    )


def compaction(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_compact_{i:02d}", project)
    pre = _pre(s, 2 + 2 * i)
    over = dict(_OVERFLOW)
    if i % 2:
        over = {
            "http_error": 400,
            "body": {
                "error": {
                    "message": f"Input is too long: {210000 + i} tokens (maximum context length exceeded)",
                    "code": "context_length_exceeded",
                }
            },
        }
    loop = [dict(over) for _ in range(2 + i % 3)]
    if i == 4:  # one call between the overflows
        loop = [dict(over), s.sh("wc -c app.py"), dict(over), dict(over)]
    return _run(
        s, "compaction_loop", "the context overflows again after each compaction", pre, loop + [s.end()]
    )


def output_limit(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_outlimit_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    if i == 0:  # a whole file written out in the answer
        body = "\n".join(f"def f{k}(x):\n    return x * {k} + {k * k % 7}\n" for k in range(120))
        text = "Here is the new module:\n```python\n" + body
    elif i == 1:  # a table that never ends
        text = "| file | change |\n|---|---|\n" + "\n".join(
            f"| mod_{k}.py | rename h{k} |" for k in range(300)
        )
    elif i == 2:  # reasoning, then a cut answer
        text = "Steps:\n" + "\n".join(f"{k}. Touch call site {k} in module {k % 9}." for k in range(200))
        return _run(
            s,
            "output_limit",
            "a long answer cut by the output limit",
            pre,
            [{"reasoning": "Plan it all out first.", "text": text, "finish_reason": "length"}],
        )
    elif i == 3:  # shorter, after a tool call in the same answer
        text = "Summary so far: " + " ".join(f"item {k} needs care;" for k in range(90))
        pre.append(s.calls(s.read_at("app.py", 0), s.sh("wc -l app.py"), text="Both at once."))
        return _run(
            s,
            "output_limit",
            "a shorter answer cut by the limit after two calls in one answer",
            pre,
            [{"text": text, "finish_reason": "length"}],
        )
    else:  # after a subagent
        head, subs = s.sub_first(2)
        text = "Report:\n" + "\n".join(f"- finding {k}: {'abc' * (k % 5 + 1)}" for k in range(250))
        return _run(
            s,
            "output_limit",
            "a long report cut by the limit after a subagent",
            pre + head,
            [{"text": text, "finish_reason": "length"}],
            subs=subs,
        )
    return _run(
        s,
        "output_limit",
        "a long answer cut by the output limit",
        pre,
        [{"text": text, "finish_reason": "length"}],
    )


def repetition(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_repeat_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    unit = [
        "I will check the parser output again before changing the split call.",
        "Next: run the check. If it fails, look at the split. Then run the check.",
        "- read app.py\n- fix the split\n- run the check",
        "The split keeps the spaces after commas, so the check fails on them.",
        "Trying again with the same plan as before for the parser module.",
    ][i]
    sep = ["\n", " ", "\n\n", "\n", "  "][i]
    text = "Thinking out loud." + sep + sep.join([unit] * (7 + 3 * i))
    finish = "stop" if i in (1, 3) else "length"
    extra: dict[str, Any] = {"reasoning": "Go."} if i == 4 else {}
    return _run(
        s,
        "turn_repetition",
        "one answer repeating the same sentences",
        pre,
        [{"text": text, "finish_reason": finish, **extra}],
        also=["output_limit"] if finish == "length" else [],
    )


def more_fresh_stuck(project: str) -> list[Run]:
    runs = []
    for build in (no_progress, monologue, empty, silent, compaction, output_limit, repetition):
        runs += [build(i, project) for i in range(PER_PATTERN)]
    return runs
