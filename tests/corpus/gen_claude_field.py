"""Write `tests/corpus/claude_field/`: Claude Code transcripts in the forms the stuck sessions
users published took, and the healthy ones that were called stuck, as the CLI writes its lines.

Written from those sessions' descriptions (refusals at the prompt and by the auto-mode
classifier, turns that announce work and stop until a person types "proceed", a rebuild thrash
with small edits between tries, a build failing four times and then fixed in an inline sidechain,
an Explore subagent narrating its searches). The detector changes were made against them: a
tuning set, not a held-out one.

    python tests/corpus/gen_claude_field.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "claude"))
sys.path.insert(0, str(Path(__file__).parents[1]))

from claude_lines import assistant, jsonl, tool_result, tool_use, user

HERE = Path(__file__).parent / "claude_field"
REFUSED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)
CLASSIFIER = "Permission for this action was denied. Reason: outside the scope of the task."
BUILD_FAIL = (
    "src/index.ts(4,10): error TS2305: Module './parser' has no exported member 'Token'.\nExit code 2"
)


def _sid(n: int) -> str:
    return f"7e1d0000-0000-4000-8000-{n:012d}"


def _text(sid: str, mid: str, text: str, **kw: Any) -> list[dict[str, Any]]:
    return assistant(sid, mid, [{"type": "text", "text": text}], **kw)


def _call(sid: str, mid: str, call: str, name: str = "Bash", **inp: Any) -> list[dict[str, Any]]:
    return assistant(sid, mid, [tool_use(call, name, **inp)])


def refusals(sid: str, n: int, why: str, then_stop: bool) -> list[dict[str, Any]]:
    lines = [user(sid, "Clean up the release branch and push it.")]
    for i in range(n):
        lines += _call(sid, f"msg_r{i}", f"toolu_r{i}", command=f"git push --force origin release-{i}")
        lines.append(user(sid, tool_result(f"toolu_r{i}", why, error=True)))
    if then_stop:
        lines += _text(sid, "msg_end", "I cannot push without permission.")
    return lines


def one_refusal(sid: str) -> list[dict[str, Any]]:
    lines = refusals(sid, 1, REFUSED, False)
    lines += _call(sid, "msg_s", "toolu_s", command="git status --short")
    lines.append(user(sid, tool_result("toolu_s", " M CHANGELOG.md")))
    lines += _text(sid, "msg_end", "I left the push to you; the tree has one change.")
    return lines


def announcing(sid: str, nudges: int) -> list[dict[str, Any]]:
    lines = [user(sid, "The parser test fails; fix it.")]
    lines += _call(sid, "msg_0", "toolu_0", "Read", file_path="src/parser.ts")
    lines.append(user(sid, tool_result("toolu_0", "export function parse() {}")))
    for i in range(nudges):
        lines += _text(
            sid, f"msg_a{i}", "I see the cause: the token type is not exported. Let me fix that now."
        )
        lines.append(user(sid, "proceed"))
    lines += _text(sid, "msg_end", "Now let me run the tests to confirm:")
    return lines


def thrash(sid: str, tries: int, fixed: bool) -> list[dict[str, Any]]:
    lines = [user(sid, "Make the build pass.")]
    for i in range(tries):
        lines += _call(sid, f"msg_b{i}", f"toolu_b{i}", command="npm run build")
        lines.append(user(sid, tool_result(f"toolu_b{i}", BUILD_FAIL, error=True)))
        edit = {"file_path": "src/parser.ts", "old_string": f"type T{i} =", "new_string": f"type T{i + 1} ="}
        lines += _call(sid, f"msg_e{i}", f"toolu_e{i}", "Edit", **edit)
        lines.append(user(sid, tool_result(f"toolu_e{i}", "The file src/parser.ts has been updated.")))
    if fixed:
        lines += _call(sid, "msg_ok", "toolu_ok", command="npm run build")
        lines.append(user(sid, tool_result("toolu_ok", "Build finished in 2.1s")))
        lines += _text(sid, "msg_end", "The build passes.")
    return lines


def explore(sid: str, searches: int) -> list[dict[str, Any]]:
    lines = [user(sid, "Find every caller of parse().")]
    for i in range(searches):
        lines += _text(sid, f"msg_t{i}", "Now let me search for more callers.")
        lines += _call(sid, f"msg_g{i}", f"toolu_g{i}", "Grep", pattern="parse\\(", path=f"src/m{i}")
        lines.append(user(sid, tool_result(f"toolu_g{i}", f"src/m{i}/a.ts:3: parse(x)")))
    lines += _text(sid, "msg_end", f"parse() is called in {searches} modules, listed above.")
    return lines


def sidechain_fixed(sid: str) -> list[dict[str, Any]]:
    """The main session hands the build to a subagent kept inline (1.0.x): it fails four times
    and then passes; the main session reports it."""
    main = [user(sid, "Get the build green.", isSidechain=False)]
    main += assistant(
        sid, "msg_m", [tool_use("toolu_t", "Task", prompt="Make the build pass.")], isSidechain=False
    )
    side = thrash(sid, 4, True)
    side[0] = user(sid, "Make the build pass.")
    parent = side[0]["uuid"]
    for ln in side:
        ln["isSidechain"] = True
        if ln is not side[0]:
            ln["parentUuid"], parent = parent, ln["uuid"]
    tail = [user(sid, tool_result("toolu_t", "The build passes."), isSidechain=False)]
    tail += _text(sid, "msg_done", "The build is green.", isSidechain=False)
    return [*main, *side, *tail]


RUNS: list[tuple[str, str, list[dict[str, Any]], str]] = [
    (
        "refused_user_5",
        "permission_deadlock",
        refusals(_sid(1), 5, REFUSED, True),
        "the person refused each push",
    ),
    (
        "refused_classifier_4",
        "permission_deadlock",
        refusals(_sid(2), 4, CLASSIFIER, False),
        "auto-mode denied",
    ),
    ("refused_mixed_6", "permission_deadlock", refusals(_sid(3), 6, REFUSED, False), "refused, kept asking"),
    ("announce_proceed_2", "silent_stop", announcing(_sid(4), 2), "'Let me fix that now.', then 'proceed'"),
    ("announce_proceed_1", "silent_stop", announcing(_sid(5), 1), "announced, nudged once, stopped again"),
    ("thrash_6", "doom_loop", thrash(_sid(6), 6, False), "the same build error after each small edit"),
    ("thrash_8", "doom_loop", thrash(_sid(7), 8, False), "rebuild-and-retry, nothing the build sees changes"),
    ("ok_refused_once", "healthy", one_refusal(_sid(8)), "one refusal, then other work and an answer"),
    ("ok_build_fixed", "healthy", thrash(_sid(9), 4, True), "the build failed four times, then passed"),
    ("ok_sidechain_fixed", "healthy", sidechain_fixed(_sid(10)), "the same, in an inline sidechain"),
    ("ok_explore", "healthy", explore(_sid(11), 8), "an Explore search narrated with 'Now let me'"),
]


def _onset(lines: list[dict[str, Any]]) -> int:
    """Where the stall begins: the first refused or failing call (its assistant line), else the
    first turn that announces work and ends."""
    parts = [(ln.get("type"), ln.get("message", {}).get("content")) for ln in lines]
    items = [(k, [c for c in b if isinstance(c, dict)] if isinstance(b, list) else []) for k, b in parts]
    for k, (kind, body) in enumerate(items):
        if kind == "user" and any(c.get("is_error") for c in body):
            return k - 1
    for k, (kind, body) in enumerate(items):
        if kind == "assistant" and any("Let me" in str(c.get("text", "")) for c in body):
            return k
    return 1


def build() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = [
        ("about.json", json.dumps({"title": __doc__.split("\n\n")[1].replace("\n", " ")}).encode() + b"\n")
    ]
    for name, label, lines, note in RUNS:
        also = ["retry_cascade"] if name.startswith("thrash") else []  # the same failure: both see it
        doc: dict[str, Any] = {"label": label, "also": also, "note": note}
        if label != "healthy":  # one message per line: the stall's first line, and the last
            doc |= {"pattern_start": _onset(lines), "pattern_end": len(lines) - 1}
        doc |= {
            "session": f"{name}.jsonl",
            "recorded_from": "gen_claude_field.py",
        }
        out.append((f"{name}.jsonl", jsonl(lines)))
        out.append((f"{name}.label.json", json.dumps(doc, indent=1).encode() + b"\n"))
    return out


def main(argv: list[str]) -> int:
    stale = [n for n, data in build() if not (HERE / n).is_file() or (HERE / n).read_bytes() != data]
    if "--check" in argv:
        print("\n".join(stale))
        return 1 if stale else 0
    HERE.mkdir(exist_ok=True)
    for n, data in build():
        (HERE / n).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
