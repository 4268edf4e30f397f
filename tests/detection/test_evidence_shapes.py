"""Each built-in finding's evidence, as `--json` and the archives write it, has the keys its
declared shape (`detectors.evidence`) names: the types the code is checked against are the
JSON scripts read."""

from __future__ import annotations

import typing
from pathlib import Path

from cli.detect import load_corpus
from detectors import evidence, score

CORPUS = Path(__file__).parents[1] / "corpus"
REAL = CORPUS / "real" / "dev"  # recorded runs: edits undone and redone, thrashing commands
# the detectors whose evidence is declared per signal, and every signal they give
DECLARED = {
    "doom_loop": {"repeat", "thrash", "undo_redo"},
    "retry_cascade": {"failing_calls", "same_error", "provider_errors", "retries"},
    "permission_deadlock": {"denials", "unanswered", "hanging_calls"},
}


def _keys(shape: type) -> tuple[set[str], set[str]]:
    """The required keys of a declared shape, and all its keys (read from the hints: on 3.11
    a postponed `NotRequired` is not in `__optional_keys__`)."""
    hints = typing.get_type_hints(shape, include_extras=True)
    optional = {k for k, h in hints.items() if typing.get_origin(h) is typing.NotRequired}
    return set(hints) - optional, set(hints)


SHAPES = [_keys(t) for t in typing.get_args(evidence.Evidence) if typing.is_typeddict(t)]


def _fits(keys: set[str]) -> bool:
    return any(required <= keys <= every for required, every in SHAPES)


def test_every_declared_finding_on_the_corpus_has_a_declared_shape() -> None:
    seen: dict[str, set[str]] = {}
    for run in [*load_corpus(CORPUS), *load_corpus(REAL)]:
        found = score(run.messages, status=run.status, permissions=run.permissions, include_healthy=True)
        for f in found:
            ev = f.to_dict()["evidence"]
            if f.detector not in DECLARED:
                continue
            assert _fits(set(ev)), (run.name, f.detector, sorted(ev))
            if f.verdict == "healthy":
                continue
            seen.setdefault(f.detector, set()).add(str(ev.get("signal", "repeat")))
    assert seen == DECLARED  # every declared shape was met, and no other signal
