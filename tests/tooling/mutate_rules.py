"""Mutation testing of the key-shape rules, the token boundary and the assignment guards.

mutmut's operators change a regex only as a whole string (``"XX…XX"``); this makes the
mutants a regex can have: a quantifier's lower bound or exact count one more or one less, one
member of a character class dropped, one literal start (anchor) dropped, the token boundary,
the number and prose guards and the checks removed. Each mutant is put in place in the rule
tables (built per redactor, so the next one uses it) and the redaction tests run against it
in this process (`pytest -x`, fewer hypothesis examples); a failing run kills it.

    .venv/bin/python tests/tooling/mutate_rules.py [--tests FILE ...] [--only NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["MUTANT_UNDER_TEST"] = "rules"  # tests/archiver/mutation.py: fewer examples

import pytest  # noqa: E402

import archiver.redact as redact  # noqa: E402
import archiver.rules as rules  # noqa: E402
import archiver.vendor_rules as vendor  # noqa: E402

TESTS = [
    "tests/archiver/test_key_shape_edges.py",
    "tests/archiver/test_key_shapes.py",
    "tests/archiver/test_cut.py",
    "tests/archiver/test_redact.py",
    "tests/archiver/test_redact_gaps.py",
    "tests/archiver/test_redact_code.py",
    "tests/archiver/test_redact_edges.py",
    "tests/archiver/test_redact_key_names.py",
]
_QUANT = re.compile(rb"\{(\d+)(,\d*)?\}")
_CLASS = re.compile(rb"(?<!\\)\[(?!\^)((?:\\.|[^\]\\])+)\]")
_MEMBER = re.compile(rb"[^\\]-[^\\\]]|\\.|.")


# mutants that change nothing a caller can observe, each with the reason: reported as such and
# left out of the score, never hidden
EQUIVALENT = {
    "_AZURE_REGIONS {37,}->{36,}@16": "a run of 36 characters holds no client secret (37 at least): "
    "only one more candidate run is scanned, never another find",
    "not_prose {2,40}->{3,40}@8": "a value is six characters or more with no space: a first word "
    "shorter than six letters before a space is no value with or without the guard",
    "not_prose {2,40}->{1,40}@8": "as for {3,40}: the guard decides only first words of six "
    "letters or more, which both bounds take",
    "azure#30 {31,34}->{30,34}@37": "a 30-character body makes a run of 36, which the region scan "
    "(37 at least) never hands to the pattern",
    "not_number [<>]-<@11": "no value the guard looks at starts with `<`: the first byte of a "
    "value is never one",
    "not_number [\\d.,_]-,@21": "a comma also ends a number, so `1,234` is a number whether "
    "the comma is read as part of it or as its end",
    "not_number [\\d.,_]-,@87": "as for the first digit run: the comma ends the range's second "
    "number as well",
}


@dataclasses.dataclass
class Mutant:
    name: str
    apply: Callable[[], Callable[[], None]]  # puts the mutant in place, returns the undo


def regex_mutants(pattern: bytes) -> Iterator[tuple[str, bytes]]:
    for m in _QUANT.finditer(pattern):
        n = int(m[1])
        for d in (1, -1):
            if n + d >= 0 and not (m[2] and m[2] != b"," and n + d > int(m[2][1:])):
                new = b"{%d%s}" % (n + d, m[2] or b"")
                yield (
                    f"{m[0].decode()}->{new.decode()}@{m.start()}",
                    pattern[: m.start()] + new + pattern[m.end() :],
                )
    for m in _CLASS.finditer(pattern):
        members = _MEMBER.findall(m[1])
        if len(members) < 2:
            continue
        for i, gone in enumerate(members):
            body = b"".join(members[:i] + members[i + 1 :])
            yield (
                f"[{m[1].decode()}]-{gone.decode()}@{m.start()}",
                pattern[: m.start(1)] + body + pattern[m.end(1) :],
            )


def _setter(module: Any, attr: str, value: Any) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        old = getattr(module, attr)
        setattr(module, attr, value)
        return lambda: setattr(module, attr, old)

    return apply


def _digit_boundary(text: bytes, i: int) -> bool:
    return i == 0 or not chr(text[i - 1]).isalnum()


def _no_line_start(text: bytes, i: int) -> bool:
    return i == 0 or not chr(text[i - 1]).isalpha()


def mutants() -> Iterator[Mutant]:
    shapes = vendor._SHAPES
    for i, (name, anchors, pattern) in enumerate(shapes):
        for what, new in regex_mutants(pattern):
            table = (*shapes[:i], (name, anchors, new), *shapes[i + 1 :])
            yield Mutant(f"{name}#{i} {what}", _setter(vendor, "_SHAPES", table))
        for j in range(len(anchors)) if len(anchors) > 1 else ():
            table = (*shapes[:i], (name, anchors[:j] + anchors[j + 1 :], pattern), *shapes[i + 1 :])
            yield Mutant(
                f"{name}#{i} anchor {anchors[j].decode()} dropped", _setter(vendor, "_SHAPES", table)
            )
    for attr in ("_CONNECTION_KEY", "_SIGNATURE", "_DOCKER_VALUE", "_AZURE_REGIONS"):
        for what, new in regex_mutants(getattr(vendor, attr)):
            yield Mutant(f"{attr} {what}", _setter(vendor, attr, new))
    keys = vendor._SIGNATURE_KEYS
    for j in range(len(keys)):
        yield Mutant(
            f"signature key {keys[j].decode()} dropped",
            _setter(vendor, "_SIGNATURE_KEYS", keys[:j] + keys[j + 1 :]),
        )
    yield Mutant("token boundary removed", _setter(redact, "token_start", lambda text, i: True))
    yield Mutant("token boundary: a digit ends it too", _setter(redact, "token_start", _digit_boundary))
    yield Mutant("azure client start removed", _setter(vendor, "_AZURE_START", b""))
    yield Mutant("token boundary: line start not taken", _setter(redact, "token_start", _no_line_start))
    yield Mutant("openai digit check removed", _setter(rules, "_has_digit", lambda s: True))
    yield Mutant("six-character check removed", _setter(rules, "_six_characters", lambda s: True))
    yield Mutant(
        "six-character check: five",
        _setter(rules, "_six_characters", lambda s: len(s.decode("utf-8", "replace")) >= 5),
    )
    yield Mutant(
        "six-character check: seven",
        _setter(rules, "_six_characters", lambda s: len(s.decode("utf-8", "replace")) >= 7),
    )
    yield Mutant("masked-value check removed", _setter(rules, "_unmasked", rules._six_characters))
    parts = rules._parts()
    for field in ("not_number", "not_prose", "not_type", "not_example"):
        value = getattr(parts, field)
        changes = [("removed", b""), *regex_mutants(value)]
        for what, new in changes:
            made = dataclasses.replace(parts, **{field: new})
            yield Mutant(f"{field} {what}", _setter(rules, "_parts", lambda made=made: made))


def run(tests: list[str]) -> bool:
    """True when the tests fail (the mutant is killed). One file at a time, in the order given,
    stopping at the first that fails: a fast file first kills most mutants without collecting
    the slow ones."""
    for test in tests:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = [test, "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-p", "no:randomly"]
            code = pytest.main(args)
        if code != 0:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", nargs="*", default=TESTS)
    ap.add_argument("--only", default="", help="run only the mutants whose name holds this")
    ap.add_argument("--every", type=int, default=1, help="run every n-th mutant only (a sample)")
    args = ap.parse_args()
    os.chdir(ROOT)
    assert not run(args.tests), "the tests fail without any mutant"
    killed, survived, same = 0, [], 0
    t0 = time.monotonic()
    for n, m in enumerate(mutants()):
        if args.only not in m.name or n % args.every:
            continue
        if m.name in EQUIVALENT:
            same += 1
            print(f"equivalent {m.name}: {EQUIVALENT[m.name]}", flush=True)
            continue
        undo = m.apply()
        try:
            dead = run(args.tests)
        finally:
            undo()
        killed += dead
        if not dead:
            survived.append(m.name)
        print(("killed  " if dead else "SURVIVED") + f" {m.name}", flush=True)
    total = killed + len(survived)
    rate = 100 * killed / max(total, 1)
    print(f"\n{killed} of {total} mutants killed ({rate:.1f} %) in {time.monotonic() - t0:.0f} s")
    print(f"{same} equivalent (above, each with its reason), not counted")
    for name in survived:
        print(f"  survived: {name}")


if __name__ == "__main__":
    main()
