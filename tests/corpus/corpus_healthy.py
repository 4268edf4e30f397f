"""Healthy sessions for the detector corpus: the hard cases that look stuck but are not."""

from __future__ import annotations

import random
from typing import Any

from corpus_session import FILES, Session, bash, edit, finish_idle, read, run_busy

__all__ = [
    "gen_flaky_explore",
    "gen_long_build",
    "gen_long_reasoning",
    "gen_many_reads",
    "gen_mixed",
    "gen_polling",
    "gen_recheck",
    "gen_test_fix",
    "gen_waiting_server",
]


def gen_polling(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_poll_{k}")
    s.user("Wait for CI and then merge.")
    n = rng.randint(10, 18)
    for i in range(n):
        out = "in_progress" if i < n - 1 else "completed success"
        if k % 2:
            s.step(tools=[("bash", bash("sleep 30 && gh run view 42 --json status"), ("ok", out))])
        else:
            s.step(tools=[("bash", bash("sleep 30"), ("ok", ""))])
            s.step(tools=[("bash", bash("gh run view 42 --json status"), ("ok", out))])
        run_busy(s, 2)
    s.step(tools=[("bash", bash("gh pr merge 7"), ("ok", "merged"))])
    s.step(text="CI passed and the PR is merged.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "polling with sleep"}


def gen_long_build(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_build_{k}")
    s.user("Build the release.")
    s.step(
        text="Starting the build; it takes a while.",
        tools=[("bash", bash("make release"), ("running",))],
        completed=False,
    )
    run_busy(s, rng.randint(150, 250))
    s.messages.pop()
    s.step(
        text="Starting the build; it takes a while.", tools=[("bash", bash("make release"), ("ok", "built"))]
    )
    s.step(tools=[("bash", bash("ls dist"), ("ok", "app.tar.gz"))])
    s.step(text="The release is in dist/app.tar.gz.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "a long build"}


def gen_many_reads(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_reads_{k}")
    s.user("Explain the architecture.")
    files = FILES[:]
    rng.shuffle(files)
    for i, f in enumerate(files[: rng.randint(35, 55)]):
        s.step(text="Reading on." if i % 7 == 0 else None, tools=[("read", read(f), ("ok", f"module {f}"))])
    s.step(text="The app is split into sixty small modules; here is how they fit.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "many different reads"}


def gen_test_fix(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_testfix_{k}")
    s.user("Make the tests pass.")
    rounds = rng.randint(4, 7)
    for i in range(rounds):
        s.step(
            text="Running the tests." if i == 0 else None,
            tools=[("bash", bash("pytest -q"), ("exit", 1, f"{rounds - i} failed"))],
        )
        s.step(tools=[("read", read("src/calc.py"), ("ok", "code"))])
        s.step(
            tools=[("edit", edit("src/calc.py", f"bug{i}", f"fix{i}"), ("ok", "edited"))],
            patch=["src/calc.py"],
        )
    s.step(tools=[("bash", bash("pytest -q"), ("ok", "all passed"))])
    s.step(text="All tests pass now.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "test-fix-test that makes progress"}


def gen_long_reasoning(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_think_{k}")
    s.user("Refactor the parser.")
    s.step(text="Reading the parser.", tools=[("read", read("src/parser.py"), ("ok", "def parse(): ..."))])
    for _ in range(rng.randint(1, 2)):
        s.step(reasoning="Consider the grammar. " * 400, finish="tool-calls", output_tokens=0)
    s.step(
        reasoning="Now write it.",
        tools=[("write", {"filePath": "/work/app/src/parser.py", "content": "x" * 4000}, ("ok", "written"))],
        patch=["src/parser.py"],
    )
    s.step(text="The parser is refactored.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "long reasoning before a big edit"}


def gen_mixed(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_mixed_{k}")
    s.user("Add logging.")
    for attempt in (1, 2):
        s.sample("retry", attempt=attempt)
    s.step(text="Let me check.", tools=[("bash", bash("grep -rn logging src"), ("exit", 1, ""))])
    s.step(text="Let me check.", tools=[("read", read("src/main.py"), ("ok", "main"))])
    rid = s.ask("read", [".env"], call="call_x")
    s.reply(rid, "once")
    s.step(text="Let me check.", tools=[("read", read(".env"), ("ok", "A=1"))])
    s.step(tools=[("edit", edit("src/main.py", "main", "main + log"), ("ok", "ok"))], patch=["src/main.py"])
    s.step(completed=True, bare=True)
    s.event("session.error", error={"name": "ContextOverflowError", "data": {"message": "too long"}})
    s.user("", compaction=True)
    s.step(text="Summary: logging added to main.", summary=True)
    s.step(tools=[("bash", bash("pytest -q"), ("exit", 1, "1 failed"))])
    s.step(tools=[("bash", bash("pytest -q"), ("exit", 1, "1 failed"))])
    s.step(tools=[("edit", edit("src/main.py", "log", "logger"), ("ok", "ok"))], patch=["src/main.py"])
    s.step(tools=[("bash", bash("pytest -q"), ("ok", "passed"))])
    s.step(text="Logging is in place.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "mixed signals"}


def gen_waiting_server(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_server_{k}")
    s.user("Start the dev server and check the health endpoint.")
    s.step(tools=[("bash", bash("nohup npm run dev &"), ("ok", "started"))])
    n = rng.randint(6, 12)
    for i in range(n):
        ok = i == n - 1
        res = ("ok", '{"ok":true}') if ok else ("exit", 7, "curl: (7) Failed to connect")
        s.step(tools=[("bash", bash("sleep 2 && curl -sf localhost:3000/health"), res)])
    s.step(text="The server is up and healthy.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "polling a server that is starting"}


def gen_flaky_explore(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_explore_{k}")
    s.user("Find where the retry budget is set and fix the flaky test.")
    seen: list[str] = []
    for i in range(rng.randint(24, 32)):
        if seen and rng.random() < 0.25:
            f = rng.choice(seen)  # go back to a file already read
        else:
            f = FILES[i % len(FILES)]
            seen.append(f)
        tool = rng.choice([("read", read(f)), ("grep", {"pattern": f"retry{i}", "path": "src"})])
        s.step(text="Looking." if i % 6 == 0 else None, tools=[(tool[0], tool[1], ("ok", "..."))])
    for _ in range(2):  # a flaky test fails twice the same way, then passes
        s.step(tools=[("bash", bash("pytest -q tests/test_retry.py"), ("exit", 1, "1 failed"))])
    s.step(tools=[("bash", bash("pytest -q tests/test_retry.py"), ("ok", "1 passed"))])
    s.step(
        tools=[("edit", edit("src/retry.py", "budget = 1", "budget = 3"), ("ok", "ok"))],
        patch=["src/retry.py"],
    )
    s.step(text="The budget was too low; raised it to 3.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "long exploration with revisits and a flaky test"}


def gen_recheck(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"ok_recheck_{k}")
    s.user("Deploy and watch the rollout.")
    s.step(tools=[("bash", bash("kubectl apply -f deploy.yaml"), ("ok", "configured"))])
    ready = 0
    for _ in range(rng.randint(6, 9)):  # no sleep, but the answer moves on each time
        ready += 1
        out = f"deployment rolling: {ready} of 9 pods ready" if ready < 9 else "rollout complete"
        s.step(tools=[("bash", bash("kubectl rollout status deploy/app --watch=false"), ("ok", out))])
        ready = min(9, ready + rng.randint(0, 1))
    s.step(text="The rollout is progressing as expected.")
    finish_idle(s)
    return s, {"label": "healthy", "also": [], "note": "re-checking something whose answer changes"}
