"""Monologue, compaction loop and no progress."""

from __future__ import annotations

from detstreams import Stream, bash, call, edit, read
from hypothesis import given, settings
from hypothesis import strategies as st

from detectors import Finding, Probe, Thresholds, score
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


def test_the_same_todo_list_written_three_times_with_nothing_between_is_stuck() -> None:
    items = ["read parser", "write test", "fix split"]
    s = Stream().user().step(read("notes.md")).step(_todos(items, 0)).step(_todos(items[::-1], 1))
    assert finding(s, "no_progress").verdict == "healthy"  # written, then marked: a plan kept
    s.step(_todos(items, 2))
    f = finding(s, "no_progress")
    assert f.verdict == "stuck" and f.evidence["signal"] == "replanning"
    assert f.evidence["idle_rewrites"] == 2 and f.evidence["new_facts"] == 1


def test_a_todo_list_marked_after_each_look_up_is_not_idle_replanning() -> None:
    items = ["read parser", "read tests", "fix split"]
    s = Stream().user().step(_todos(items, 0)).step(_todos(items, 0))  # written, then marked
    for k in (1, 2):
        s.step(read(f"src/{k}.py")).step(read(f"tests/{k}.py")).step(_todos(items, k))
    assert finding(s, "no_progress").verdict == "healthy"


def _plan_stream(steps: list[int]) -> Stream:
    """0: the same todo list again; 1: a look-up never made before; 2: a look-up made before."""
    s = Stream().user()
    for k, kind in enumerate(steps):
        s.step(_todos(["a", "b"], k % 3) if kind == 0 else read(f"f{k if kind == 1 else 0}.py"))
    return s


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=30), st.integers(1, 4))
def test_idle_replanning_is_stuck_exactly_when_the_list_comes_back_with_nothing_found(
    steps: list[int], idle: int
) -> None:
    # Stuck by this signal iff at some point the same list was written again `idle` times with
    # no look-up between that found anything new (a repeated look-up finds nothing).
    run = best = 0
    written, looked = False, set()
    for k, kind in enumerate(steps):
        if kind == 0:
            run = run + 1 if written else 0
            written = True
            best = max(best, run)
        elif (path := k if kind == 1 else 0) not in looked:
            looked.add(path)
            run = 0
    others_off = {n: 99 for n in ("no_progress_replan_stuck", "no_progress_same_stuck")}
    others_off |= {n: 99 for n in ("no_progress_min_steps", "no_progress_long_steps")}
    th = Thresholds(no_progress_replan_idle_stuck=idle, **others_off)
    s = _plan_stream(steps)
    f = next(f for f in score(s.messages, include_healthy=True, thresholds=th) if f.detector == "no_progress")
    idle_stuck = f.verdict == "stuck" and f.evidence.get("idle_rewrites") is not None
    assert idle_stuck == (best >= idle)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=30))
def test_replanning_fed_step_by_step_equals_the_batch(steps: list[int]) -> None:
    s = _plan_stream(steps)
    probe = Probe()
    for m in s.messages:
        probe.feed(m)
        probe.findings(include_healthy=True)  # asking on the way must not change the answer
    assert probe.findings(include_healthy=True) == score(s.messages, include_healthy=True)


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
