"""Record the Claude Code part of the corpus: the real CLI (2.1.328) against the fake Anthropic API.

    python tests/corpus/record_claude.py            # all runs -> tests/corpus/claude/{dev,heldout}
    python tests/corpus/record_claude.py --only cc_doom_00 --out /tmp/x

Each run is the CLI's own stream-json output (`-p ... --output-format stream-json --verbose`),
kept as `NAME.jsonl` with `NAME.label.json` beside it; octel reads it through the Claude
converter (`archiver/claude/`) like any other file. The split is `record_real.split`: within each
label, ordered by the SHA-256 of the name, every third held out; each batch of scenarios (the
first here, the long answers and denials of `claude_long_turns`) is split on its own
(`claude_split`), so a new batch never moves an earlier run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent
for _p in (_HERE, _HERE.parent, _HERE.parent / "claude"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from claude_cli import run_claude  # noqa: E402
from claude_long_turns import long_turn_runs  # noqa: E402
from fake_api import Answer, Fail, fake_anthropic  # noqa: E402
from record_real import split  # noqa: E402

from archiver.claude.convert import from_claude  # noqa: E402
from archiver.claude.loading import tree_of_file  # noqa: E402
from detectors.model import Retry  # noqa: E402

__all__ = ["OUT", "all_claude_runs", "claude_runs", "claude_split", "record"]

OUT = _HERE / "claude"
Run = dict[str, Any]


def _bash(cmd: str, what: str = "Run it") -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": cmd, "description": what})


def _run(name: str, label: str, note: str, main: list[Any], begins: int = -1, **extra: Any) -> Run:
    return {"name": name, "label": label, "note": note, "main": main, "begins": begins, **extra}


def _look(k: int) -> list[Answer]:
    cmds = ["ls -la", "cat README.md", "git status --short", "wc -l calc.py", "head -n 3 calc.py", "pwd"]
    return [
        Answer(("Checking.", "", "Next.")[i % 3], tools=[_bash(cmds[(i + k) % len(cmds)])]) for i in range(k)
    ]


def claude_runs() -> list[Run]:
    runs: list[Run] = []
    failing = ["cat missing.txt", "python3 -c 'import nosuchmodule'", "ls build/output", "make dist"]
    for i in range(6):  # the same failing command again and again
        pre = _look(i % 3)
        text = ("", "Trying again.", "Let me rerun it.")[i % 3]
        loop = [Answer(text, tools=[_bash(failing[i % 4])]) for _ in range(4 + i % 3)]
        runs.append(
            _run(
                f"cc_doom_{i:02d}",
                "doom_loop",
                "the same failing Bash command repeated",
                [*pre, *loop, Answer("It keeps failing.")],
                len(pre),
            )
        )
    for i in range(3):  # cut by --max-turns while looping
        pre = _look(1)
        loop = [Answer(tools=[_bash("cat missing.txt")]) for _ in range(8)]
        runs.append(
            _run(
                f"cc_maxloop_{i:02d}",
                "doom_loop",
                "a failing command repeated until --max-turns",
                [*pre, *loop],
                len(pre),
                args=["--max-turns", str(5 + i)],
            )
        )
    for i in range(5):  # the API keeps answering 529; the CLI retries, then gives up
        pre = _look(i % 3)
        runs.append(
            _run(
                f"cc_overload_{i:02d}",
                "retry_cascade",
                "the API answers 529 until the CLI gives up",
                [*pre, *[Fail(529) for _ in range(12)]],
                len(pre),
                also=["silent_stop"],
                env={"CLAUDE_CODE_MAX_RETRIES": str(4 + i % 3)},
            )
        )
    tools = [
        "cargo build",
        "go build ./...",
        "mvn -q package",
        "gradle test",
        "bazel build //...",
        "dotnet test",
    ]
    for i in range(3):  # different commands, one failure: not installed
        loop = [Answer(tools=[_bash(c)]) for c in tools[i:] + tools[:i]]
        runs.append(
            _run(
                f"cc_tools_{i:02d}",
                "retry_cascade",
                "build tools that are not installed, one after another",
                [*loop, Answer("Nothing builds here.")],
                0,
            )
        )
    runs += _healthy()
    return runs


def _healthy() -> list[Run]:
    runs: list[Run] = []
    for i in range(4):  # distinct look-arounds, an edit, a check
        main = [
            *_look(2 + i),
            Answer(tools=[("Write", {"file_path": "notes.txt", "content": f"v{i}\n"})]),
            Answer(tools=[_bash("cat notes.txt")]),
            Answer("Done."),
        ]
        runs.append(_run(f"cc_ok_work_{i:02d}", "healthy", "look around, write, check", main))
    for i in range(3):  # one or two 529s, then on
        main = [*_look(1), *[Fail(529) for _ in range(1 + i % 2)], *_look(2), Answer("All good.")]
        runs.append(_run(f"cc_ok_retry_{i:02d}", "healthy", "a 529 or two, then the work goes on", main))
    for i in range(3):  # a failure, then a fix
        main = [
            Answer(tools=[_bash("python3 calc.py && cat out.txt")]),
            Answer("Creating it.", tools=[_bash("echo ok > out.txt")]),
            Answer(tools=[_bash("python3 calc.py && cat out.txt")]),
            Answer("Fixed."),
        ]
        runs.append(_run(f"cc_ok_fix_{i:02d}", "healthy", "a failure, a fix, the same command works", main))
    for i in range(3):  # healthy work cut by --max-turns
        runs.append(
            _run(
                f"cc_ok_maxturns_{i:02d}",
                "healthy",
                "different commands until --max-turns",
                _look(6),
                args=["--max-turns", str(3 + i)],
            )
        )
    for i in range(2):  # a subagent does the reading
        launch = (
            "Agent",
            {
                "description": "List files",
                "prompt": "List the files.",
                "subagent_type": "general-purpose",
                "run_in_background": False,
            },
        )
        runs.append(
            _run(
                f"cc_ok_sub_{i:02d}",
                "healthy",
                "a subagent lists the files",
                [Answer("Delegating.", tools=[launch]), Answer("Two files.")],
                sub=[*_look(2 + i), Answer("README.md and calc.py")],
            )
        )
    return runs


def all_claude_runs() -> list[Run]:
    """The first batch and the runs of long answers and denied tools (`claude_long_turns`)."""
    return [*claude_runs(), *long_turn_runs()]


def claude_split() -> dict[str, str]:
    """name -> "dev" | "heldout": each batch split on its own, so a new batch moves no old run."""
    return {**split(claude_runs()), **split(long_turn_runs())}


def _label(run: Run, path: Path) -> dict[str, Any]:
    tree = tree_of_file(path)
    msgs = from_claude(tree.sessions[0].messages, tree.results).messages
    start = -1
    if run["begins"] >= 0:  # the assistant turn (or retried request) where the pattern begins
        turns = [
            k
            for k, m in enumerate(msgs)
            if m.role == "assistant" or any(isinstance(p, Retry) for p in m.parts)
        ]
        start = turns[min(run["begins"], len(turns) - 1)] if turns else -1
    return {
        "label": run["label"],
        "also": run.get("also", []),
        "note": run["note"],
        "pattern_start": start,
        **({"pattern_end": len(msgs) - 1} if start >= 0 else {}),  # the stall lasts to the run's end
        "session": path.name,
        "recorded_from": "Claude Code CLI 2.1.328 with the fake Anthropic API",
    }


def _one(out: Path, where: dict[str, str], run: Run) -> None:
    with tempfile.TemporaryDirectory() as tmp, fake_anthropic(run["main"], run.get("sub")) as fake:
        done = run_claude(
            Path(tmp),
            fake.url,
            "-p",
            "Fix the build.",
            *run.get("perms", ["--dangerously-skip-permissions"]),
            "--output-format",
            "stream-json",
            "--verbose",
            *run.get("args", []),
            env=run.get("env"),
        )
    folder = out / where[run["name"]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run['name']}.jsonl"
    path.write_text(done.stdout)
    (folder / f"{run['name']}.label.json").write_text(json.dumps(_label(run, path), indent=1) + "\n")
    print(f"{run['name']}: exit {done.exit_code}", flush=True)


def record(out: Path, only: list[str] | None = None, workers: int = 4) -> list[Run]:
    runs = all_claude_runs()
    where = claude_split()
    if only:
        runs = [r for r in runs if r["name"] in set(only)]
    with ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(_one, out, where, r) for r in runs]:
            f.result()
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    runs = record(args.out, args.only, args.workers)
    print(f"recorded {len(runs)} runs into {args.out}")


if __name__ == "__main__":
    main()
