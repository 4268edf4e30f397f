"""The quick subset, `pytest --quick`: what a change needs before the full run.

It leaves out every test that needs a real part (marked `realparts` at collection) and the few
without one that take long (marked `slow`), and draws a fifth of each property test's examples
(at least 5, never more than its own): the same properties, searched less deeply. The full run
(no `--quick`, as CI runs it) keeps every test and every example.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings

__all__ = ["QUICK_MARKS", "SLOW", "add_option", "fewer_examples", "mark_slow", "quick_examples", "select"]

QUICK_MARKS = "not realparts and not slow"
_SHARE = 5
_FLOOR = 5

# Tests that need no real part yet take long whatever their examples: processes started and
# killed, servers on real ports, a benchmark's smoke run, a fuzz of every route. Marked `slow`
# at collection (a file, or a test of it with all its parameters); the seconds are each one's
# time in one process on the 2-core host, busy, before the quick subset existed.
SLOW = {
    "tests/web/test_api_fuzz.py": 40,  # schemathesis over every operation, on a live server
    "tests/foundation/test_concurrency.py::test_concurrent_writers_lose_and_double_nothing_across_kills": 24,
    "tests/cli/test_startup.py::test_a_command_pays_only_for_what_it_uses": 20,  # fresh interpreters
    "tests/cli/test_why.py::test_why_on_the_labelled_corpus": 19,  # the whole corpus, one by one
    "tests/live/test_bench_watch_smoke.py": 22,  # the live benchmark's smoke runs
    "tests/archiver/test_crash_safety.py::test_kill_9_at_random_moments_of_archiving_and_indexing": 12,
    "tests/alerts/test_alert_deliverer.py::test_start_alerts_delivers_and_the_cli_and_api_show_it": 8,
    "tests/web/test_host_strict.py": 7,  # a real `octel serve` and raw sockets
    "tests/cli/test_addon_package.py": 11,  # an add-on package installed and run
    "tests/cli/test_serve_errors.py::test_a_busy_port_is_one_sentence": 6,
    "tests/claude/test_pool.py::test_workers_write_the_files_the_index_then_names": 6,  # process pools
    "tests/web/test_login_trust.py::test_octel_serve_refuses_a_short_token_on_every_address": 5,
    "tests/foundation/test_reaper.py": 10,  # test runs started and killed
    "tests/opencode2/test_delete_soak_v2.py": 5,  # a soak
    "tests/foundation/test_upgrade_at_once.py": 5,  # four processes upgrading at once
    # and, the slowest of the first quick run (two workers, load 8), in its seconds:
    "tests/foundation/test_packaging.py": 30,  # a wheel built
    "tests/foundation/test_door.py::test_a_large_refused_write_is_answered_at_once": 10,
    "tests/foundation/test_door.py::test_a_chunked_body_over_the_limit_is_413_while_it_streams": 13,
    "tests/metrics/test_bench_scrape_store.py": 8,  # a benchmark's store built
}


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help=f'the quick subset: -m "{QUICK_MARKS}" and a fifth of each property test\'s examples',
    )


def select(config: pytest.Config) -> None:
    """Under `--quick`, leave out real parts and slow tests, on top of any `-m` given."""
    if config.getoption("quick"):
        given = config.option.markexpr
        config.option.markexpr = f"({given}) and {QUICK_MARKS}" if given else QUICK_MARKS


def mark_slow(items: list[pytest.Item]) -> None:
    """Mark `slow` each test that `SLOW` names, by its file or by its file and name."""
    for item in items:
        path, _, rest = item.nodeid.partition("::")
        name = rest.split("[")[0]
        if path in SLOW or f"{path}::{name}" in SLOW:
            item.add_marker(pytest.mark.slow)


def quick_examples(own: int) -> int:
    """How many examples a property test that asks for `own` draws in the quick subset."""
    return min(own, max(_FLOOR, own // _SHARE))


def fewer_examples(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--quick`, each property test draws `quick_examples` of its own count.

    A test's own `@settings(max_examples=…)` wins over any profile, so the quick count is set on
    the settings hypothesis reads when the test runs (the attribute `@settings` itself writes);
    a hypothesis that no longer has it fails here rather than running every example unsaid."""
    if not config.getoption("quick"):
        return
    seen: set[int] = set()
    for item in items:
        fn: Any = getattr(item, "obj", None)
        if getattr(fn, "hypothesis", None) is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        own = fn._hypothesis_internal_use_settings
        assert isinstance(own, settings), f"hypothesis keeps no settings on {item.nodeid}"
        fn._hypothesis_internal_use_settings = settings(own, max_examples=quick_examples(own.max_examples))
