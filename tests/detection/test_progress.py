"""Monologue, compaction loop and no progress."""

from __future__ import annotations

from detstreams import Stream, bash, call, edit, read
from hypothesis import given, settings
from hypothesis import strategies as st

from detectors import Finding, score
from detectors.model import ToolCall


def finding(s: Stream, name: str) -> Finding:
    return next(f for f in score(s.messages, include_healthy=True) if f.detector == name)


def test_the_same_text_again_and_again() -> None:
    s = Stream().user().repeat(4, text="The  service crashes because of X.")
    s.step(text="the service crashes   because of x.")
    f = finding(s, "monologue")
    assert f.verdict == "stuck"
    assert f.evidence["repeats"] == 5


def test_the_same_words_between_different_calls_are_not_a_monologue() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(read(f"f{i}.py"), text="Let me check.")
    assert finding(s, "monologue").verdict == "healthy"


def test_different_texts_are_not_a_monologue() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(text=f"Point {i}.")
    assert finding(s, "monologue").verdict == "healthy"


def test_repeated_compactions_without_progress() -> None:
    s = Stream().user()
    for i in range(3):
        s.step(read(f"f{i}")).step(error="ContextOverflowError").step(compaction=True).step(
            text=f"Summary {i}"
        )
    f = finding(s, "compaction_loop")
    assert f.verdict == "stuck"
    assert f.evidence["compactions"] == 3


def test_overflow_errors_without_compaction_count() -> None:
    s = Stream().user().repeat(2, error="ContextOverflowError")
    assert finding(s, "compaction_loop").verdict == "stuck"


def test_one_compaction_is_healthy_and_progress_resets() -> None:
    s = Stream().user().step(error="ContextOverflowError").step(compaction=True).step(text="go on")
    assert finding(s, "compaction_loop").verdict == "healthy"
    s = Stream().user()
    for i in range(4):
        s.step(compaction=True).step(edit("a.py", i), patch=("a.py",))
    assert finding(s, "compaction_loop").verdict == "healthy"


def test_many_steps_going_over_the_same_ground() -> None:
    s = Stream().user()
    pool = [read(f"f{i}.py") for i in range(6)]
    order = [0, 3, 1, 5, 2, 4, 1, 0, 4, 2, 5, 3, 0, 2, 4, 1, 3, 5, 2, 0, 5, 1, 4, 3, 1, 2]
    for k in order:
        s.step(pool[k])
    f = finding(s, "no_progress")
    assert f.verdict == "stuck"
    assert f.evidence["distinct_calls"] == 6


def test_many_different_reads_are_exploration() -> None:
    s = Stream().user()
    for i in range(60):
        s.step(read(f"src/m{i}.py"))
    assert finding(s, "no_progress").verdict == "healthy"


def test_polling_whose_answer_moves_on_is_waiting() -> None:
    s = Stream().user()
    for i in range(40):
        s.step(bash("sleep 20")).step(bash("gh run view 3", output=f"in progress: {i} of 40 jobs done"))
    assert finding(s, "no_progress").verdict == "healthy"


def test_polling_that_never_changes_is_no_progress() -> None:
    s = Stream().user()
    for i in range(14):  # the sleep varies, the answer does not
        s.step(bash(f"sleep 0.{i % 3 + 2}; cat status.txt", output="state: pending"))
    f = finding(s, "no_progress")
    assert f.verdict == "stuck" and f.evidence["signal"] == "stale_polls" and f.start_index == 2
    s = Stream().user()
    for _ in range(14):
        s.step(bash("sleep 5")).step(bash("gh run view 3", output="queued"))
    assert finding(s, "no_progress").verdict == "stuck"
    s = Stream().user()  # long sleeps: waiting for something slow outside, not stuck yet
    for _ in range(14):
        s.step(bash("sleep 60")).step(bash("gh run view 3", output="queued"))
    assert finding(s, "no_progress").verdict == "healthy"


def test_a_todo_list_churned_without_edits_is_no_progress() -> None:
    s = Stream().user()
    for i in range(24):
        s.step(
            call(
                "todowrite",
                {
                    "todos": [
                        {"content": "fix", "status": ["pending", "in_progress"][i % 2]},
                        {"content": f"step {i}", "status": "pending"},
                    ]
                },
            )
        )
        if i % 3 == 0:
            s.step(read("app.py"))
    assert finding(s, "no_progress").verdict == "stuck"


def test_the_same_answers_again_are_stuck_before_the_share_is_judged() -> None:
    s = Stream().user().step(edit("a.py"), patch=("a.py",))
    order = [0, 1, 2, 0, 3, 1, 2, 4, 0, 5]  # ten calls, four of them asked and answered before
    for k in order:
        s.step(read(f"f{k}.py"))
    f = finding(s, "no_progress")
    assert f.verdict == "stuck" and f.evidence["signal"] == "same_answers"
    assert f.evidence["repeated_calls"] == 4 and f.start_index == 2
    s = Stream().user()  # three repeats: a re-read or two in a look around is no evidence yet
    for k in [0, 1, 2, 0, 3, 1, 2, 4, 5]:
        s.step(read(f"f{k}.py"))
    assert finding(s, "no_progress").verdict == "healthy"


def test_a_few_re_reads_in_a_long_look_around_are_not_stuck_sooner() -> None:
    s = Stream().user()
    for i in range(14):  # four re-reads among fourteen calls: under a third
        s.step(read(f"f{i}.py" if i % 4 else "f0.py"))
    assert finding(s, "no_progress").evidence.get("signal") != "same_answers"
    assert finding(s, "no_progress").verdict != "stuck"


def _todos(items: list[str], done: int) -> ToolCall:
    states = ["completed" if j < done else "pending" for j in range(len(items))]
    todos = [{"content": c, "status": st} for c, st in zip(items, states, strict=True)]
    return call("todowrite", {"todos": todos})


def test_the_same_todo_list_rewritten_more_than_anything_found_is_stuck() -> None:
    items = ["read parser", "write test", "fix split"]
    s = Stream().user().step(_todos(items, 0)).step(read("app.py"))
    for k in range(3):  # the same items, reordered or re-marked, with nothing found between
        s.step(_todos(items[::-1] if k % 2 else items, k % 2))
    f = finding(s, "no_progress")
    assert f.verdict == "stuck" and f.evidence["signal"] == "replanning"
    assert f.evidence["rewrites"] == 3 and f.evidence["new_facts"] == 1


def test_a_todo_list_kept_up_to_date_while_looking_around_is_healthy() -> None:
    items = ["read parser", "read tests", "read docs", "write fix"]
    s = Stream().user().step(_todos(items, 0))
    for k in range(1, 4):  # each rewrite follows new reads: the list tracks real findings
        s.step(read(f"src/{k}.py")).step(read(f"tests/{k}.py")).step(_todos(items, k))
    assert finding(s, "no_progress").verdict == "healthy"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=40))
def test_plans_that_follow_new_findings_never_read_as_replanning(steps: list[tuple[int, bool]]) -> None:
    # Any run where each rewrite of the list comes after a look-up that found something new:
    # the list tracks the work, however often it is rewritten and however its items are marked.
    items = ["a", "b", "c"]
    s = Stream().user()
    for k, (done, again) in enumerate(steps):
        s.step(read(f"new_{k}.py"))
        if again:
            s.step(_todos(items, done % 4))
    assert finding(s, "no_progress").evidence.get("signal") != "replanning"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=60, unique=True))
def test_calls_never_asked_before_never_read_as_the_same_answers(files: list[int]) -> None:
    s = Stream().user()
    for k in files:
        s.step(read(f"f{k}.py"))
    assert finding(s, "no_progress").evidence.get("signal") != "same_answers"


def test_a_file_change_is_progress() -> None:
    s = Stream().user()
    for i in range(32):  # four reads of the file between edits: every edit is news
        s.step(read("a.py"))
        if i % 4 == 3:
            s.step(edit("a.py", i), patch=("a.py",))
    assert finding(s, "no_progress").verdict == "healthy"


def test_the_same_answer_to_new_questions_is_not_a_monologue() -> None:
    s = Stream()
    for i in range(5):
        s.user(f"question {i}").step(text="Done.")
    assert finding(s, "monologue").verdict == "healthy"
