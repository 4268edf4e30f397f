# ruff: noqa: RUF005 - scenario scripts read best as lists added together
"""Scenario scripts of the fresh held-out set (`tests/corpus/real/fresh/`): stuck runs.

Written after the first held-out set had been looked at, with shapes the development set does
not have: bash's own `workdir` argument instead of `cd`, reads with `offset`, greps with
`include`, edits with `replaceAll`, `webfetch` and `skill` calls, several calls in one answer,
a subagent's work before the pattern, longer and shorter loops, other provider errors. Five
runs per pattern. The whole set is held out: nothing here is tuned on.
"""

from __future__ import annotations

from typing import Any

from real_steps import Steps
from real_stuck import APP, CHECK, _run

__all__ = ["FreshSteps", "fresh_stuck_runs"]

Run = dict[str, Any]
PER_PATTERN = 5


class FreshSteps(Steps):
    """Steps in the argument shapes the development set never used."""

    def sh(self, command: str, *, timeout: int | None = None, talk: bool = True) -> Turn:
        """bash run in the run's folder through `workdir`, not `cd`."""
        args: dict[str, Any] = {"command": command, "workdir": self.dir}
        if timeout is not None:
            args["timeout"] = timeout
        return self.call("bash", args, talk)

    def read_at(self, path: str, offset: int, limit: int = 40, talk: bool = True) -> Turn:
        return self.call("read", {"filePath": self.path(path), "offset": offset, "limit": limit}, talk)

    def grep_in(self, pattern: str, include: str, talk: bool = True) -> Turn:
        return self.call("grep", {"pattern": pattern, "include": include, "path": self.dir}, talk)

    def fetch(self, url: str, talk: bool = True) -> Turn:
        return self.call("webfetch", {"url": url, "format": "text", "timeout": 5}, talk)

    def calls(self, *turns: Turn, text: str = "") -> Turn:
        """Several tool calls in one answer."""
        out: Turn = {"tool_calls": [c for t in turns for c in t["tool_calls"]]}
        if text:
            out["text"] = text
        return out

    def look(self, n: int) -> list[Turn]:
        """`n` different look-arounds in the fresh shapes."""
        pool = [
            self.grep_in("def ", "*.py"),
            self.grep_in("import", "*.py"),
            self.read_at("app.py", 0, 20),
            self.glob("**/*"),
            self.sh("ls -1"),
            self.sh("head -n 5 app.py"),
            self.sh("stat -c %s app.py"),
            self.grep_in("parse", "*.py"),
            self.sh("python3 -c 'import app; print(app.parse(\"x\"))'"),
            self.glob("*.txt"),
        ]
        self.rng.shuffle(pool)
        return pool[:n]

    def sub_first(self, n: int) -> tuple[list[Turn], dict[str, Any]]:
        """A subagent looks around first: the pattern then starts in the parent."""
        sub = {"turns": self.look(n) + [self.end("It splits on commas and keeps the spaces.")]}
        return [self.task("look", "Read the parser and report how it splits")], {"look": sub}


Turn = dict[str, Any]


def _pre(s: FreshSteps, k: int) -> list[Turn]:
    return s.setup({"app.py": APP}) + s.look(k)


def doom(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_doom_{i:02d}", project)
    pre, subs = _pre(s, s.rng.randrange(1, 4)), {}
    chk = CHECK
    if i == 0:  # one failing check through workdir, reasoning between, 5 times
        loop = [s.talk(s.sh(chk, talk=False), 0.2, 0.8) for _ in range(5)]
        note = "the same failing check through workdir, reasoning between"
    elif i == 1:  # an edit whose old string is not there, again and again
        e = s.edit("app.py", "s.split(';')", "s.split(',')")
        loop = [dict(e) for _ in range(5)]
        note = "the same edit failing because its text is not in the file"
    elif i == 2:  # period 2 across two calls in one answer: check and grep together
        pair = s.calls(s.sh(chk), s.grep_in("split", "*.py"), text="Checking again.")
        loop = [dict(pair) for _ in range(5)]
        note = "the same pair of calls in one answer, again and again"
    elif i == 3:  # a subagent's report first, then a period-3 cycle without words
        head, subs = s.sub_first(3)
        pre = s.setup({"app.py": APP}) + head
        a, b, c = s.read_at("app.py", 0, 10, False), s.sh(chk, talk=False), s.glob("*.py", talk=False)
        loop = [dict(x) for x in [a, b, c] * 4]
        note = "a cycle of period 3 after a subagent's report"
    else:  # a greps-only loop with the include filter, long
        loop = [s.talk(s.grep_in("parse_all", "*.py", False), 0.5, 0.0) for _ in range(7)]
        note = "the same grep that finds nothing, seven times"
    return _run(s, "doom_loop", note, pre, loop, subs=subs)


def retry(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_retry_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    if i < 2:  # provider errors the development set did not use
        code, body = [
            (502, {"error": {"message": "Bad gateway", "type": "server_error"}}),
            (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ][i]
        err = {"http_error": code, "body": body, "headers": {"retry-after-ms": "120"}}
        run = _run(
            s,
            "retry_cascade",
            f"provider answers {code} in another body shape",
            pre,
            [dict(err) for _ in range(6)],
            abort_after=4 + i,
            also=["silent_stop"],
        )
        run["script"]["default"] = dict(err)
        return run
    if i == 2:  # webfetch of hosts that are not there
        urls = [f"http://127.0.0.1:{p}/api/v{k}" for k, p in enumerate((9, 13, 17, 19, 21, 23), 1)]
        loop = [s.fetch(u) for u in urls]
        note = "webfetch refused again and again, other URL each time"
    elif i == 3:  # reads past the end of files that do not exist, with offsets
        loop = [s.read_at(f"pkg/{m}.py", 10 * k) for k, m in enumerate(("a", "b", "c", "d", "e", "f"))]
        note = "reads with offsets of files that do not exist"
    else:  # build tools that are not installed, through workdir
        cmds = (
            "cargo build",
            "go build ./...",
            "gradle test",
            "mvn -q package",
            "bazel build //...",
            "dotnet test",
        )
        loop = [s.sh(c) for c in cmds]
        note = "build tools that are not installed, one after another"
    return _run(s, "retry_cascade", note, pre, loop + [s.end("None of the build tools work here.")])


def deadlock(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_deadlock_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 4))
    if i == 0:
        perm = [{"permission": "webfetch", "pattern": "*", "action": "ask"}]
        loop, note = [s.fetch("https://example.com/spec")], "webfetch ask nobody answers"
    elif i == 1:
        perm = [{"permission": "edit", "pattern": "*", "action": "ask"}]
        loop, note = [s.write("notes.md", "# notes\n")], "write ask nobody answers"
    elif i == 2:
        perm = [{"permission": "bash", "pattern": "python3 *", "action": "ask"}]
        loop, note = [s.sh(CHECK)], "bash ask with workdir nobody answers"
    elif i == 3:
        perm = []
        loop, note = [s.read_at("/etc/os-release", 0, 5)], "outside-the-project read asks; nobody answers"
    else:  # the edit rule denies every edit, and the model keeps trying other files
        perm = [{"permission": "edit", "pattern": "*", "action": "deny"}]
        loop = [s.edit(f, "a", "b") for f in ("app.py", "README.md", "setup.cfg", "app.py", "tox.ini")]
        # OpenCode hides a denied tool: each edit comes back as a call of an unavailable tool
        return _run(
            s,
            "retry_cascade",
            "edits of a tool the rules deny: each comes back as an unavailable tool",
            pre,
            loop + [s.end()],
            permission=perm,
            also=["permission_deadlock"],
        )
    return _run(s, "permission_deadlock", note, pre, loop + [s.end()], permission=perm, abort_after=7 + i)


def timeout(i: int, project: str) -> Run:
    s = FreshSteps(f"fr_timeout_{i:02d}", project)
    pre = _pre(s, s.rng.randrange(1, 3))
    git = "git -c user.name=dev -c user.email=dev@example.com"
    pre.append(s.sh(f"git init -q && git add -A && {git} commit -qm start"))
    cmd = [
        f"{git} commit --allow-empty",  # opens the editor
        "tail -f app.py",
        "python3 -c 'import time; time.sleep(600)'",  # git merge opens no editor without a terminal
        "python3 -m http.server 0",
        "vi -c 'set nomore' app.py",
    ][i]
    call = s.sh(cmd, timeout=1500 + 500 * i)
    return _run(
        s,
        "command_timeout",
        "a command that never returns hits the timeout, then the run stalls",
        pre,
        [call, {"delay": 120, "text": "never"}],
        abort_after=5 + i,
    )


def fresh_stuck_runs(project: str) -> list[Run]:
    from real_fresh_more import more_fresh_stuck

    runs = []
    for build in (doom, retry, deadlock, timeout):
        runs += [build(i, project) for i in range(PER_PATTERN)]
    return runs + more_fresh_stuck(project)
