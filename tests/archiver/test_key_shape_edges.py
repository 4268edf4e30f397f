"""The edges of each key shape: the shortest key its service issues is found whole, one a
character shorter (or running on past its last character) is not that rule's, and every
character a body may hold is taken. Each lower bound and each class member of the rules in
`archiver/vendor_rules.py` is pinned by one of these (`tests/tooling/mutate_rules.py`)."""

from __future__ import annotations

import pytest
from key_shapes import SHORTEST, SHORTEST_IN_CONTEXT, TOO_SHORT

from archiver.redact import Redactor

KEY = b"k" * 32
ENGINES = ["auto", "re"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("rule", "key"), SHORTEST)
def test_the_shortest_key_with_every_character_is_found_whole(rule: str, key: str, engine: str) -> None:
    red = Redactor(KEY, engine=engine)
    out, counts = red.redact_obj(f"see {key} here")
    assert out == f"see {red.placeholder(rule, key.encode()).decode()} here", (key, out)
    assert counts == {rule: 1}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("rule", "text", "key"), SHORTEST_IN_CONTEXT)
def test_the_shortest_key_in_its_context_is_found_whole(rule: str, text: str, key: str, engine: str) -> None:
    red = Redactor(KEY, engine=engine)
    out, counts = red.redact_obj(text.format(key))
    assert out == text.format(red.placeholder(rule, key.encode()).decode()), out
    assert counts == {rule: 1}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("rule", "text"), TOO_SHORT)
def test_one_character_short_is_not_that_rules(rule: str, text: str, engine: str) -> None:
    _, counts = Redactor(KEY, engine=engine).redact_obj(f"see {text} here")
    assert rule not in counts, (text, counts)


# every digit-run character, unit, range mark and closing character the number guard knows, and
# the two words of the prose guard: a count, a quantity, a range or prose is never a secret
NUMBERS = [
    *[f"max_tokens: {v}" for v in ("1234567", "1.234567", "1,234,567", "1_000_000", "~123456")],
    *[
        f"max_tokens: 123456{u}"
        for u in ("k", "m", "g", "t", "kb", "mb", "gb", "tb", "b", "ms", "s", "%", "x")
    ],
    *[
        f"max_tokens: 10{r}{v}"
        for r in ("-", "\u2013", "..", "~", "/")
        for v in ("123456", "1.2345", "1,2345", "1_2345")
    ],
    *[f"max_tokens: 1-12345{u}" for u in ("k", "m", "g", "t")],
    *[f"{a}max_tokens: 123456k{z}" for a, z in [("", " next"), ("", "\nnext"), ("", ", next"), ("", ";")]],
    *[f"{a}max_tokens: 123456k{z}" for a, z in [("f(", ")"), ("[", "]"), ("{", "}"), ("", "")]],
    "max_tokens: '123456k'",
    "max_tokens: `123456k`",
    'max_tokens: "123456k" next',
    "token: estimated to be large",
    "secret: rotated by hand",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("text", NUMBERS)
def test_every_number_and_prose_form_is_left_alone(text: str, engine: str) -> None:
    red = Redactor(KEY, engine=engine)
    assert red.redact_obj({"k": text}) == ({"k": text}, {})
    assert red.redact_obj(text) == (text, {})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_word_then_one_letter_is_not_prose(engine: str) -> None:
    out, counts = Redactor(KEY, engine=engine).redact_obj("password: correcthorse x")
    assert "correcthorse" not in out and counts == {"assignment": 1}


# what the checks after a match decide: an `sk-` body holds a digit (a hyphenated package name
# has none), and an assigned value is six characters or more, counted as characters, not bytes
CHECKED = [
    ("pip install sk-learn-and-friends-for-models now", {}),
    ("pip install sk-learn-and-friends-for-model5 now", {"openai": 1}),
    ('password: "\u00e9\u00e9\u00e9"', {}),  # six bytes, three characters
    ('password: "abcd\u00e9"', {}),  # six bytes, five characters
    ('password: "s3cr3t"', {"assignment": 1}),  # six characters
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "found"), CHECKED)
def test_the_checks_after_a_match_decide(text: str, found: dict[str, int], engine: str) -> None:
    _, counts = Redactor(KEY, engine=engine).redact_obj({"k": text})
    assert counts == found, text
