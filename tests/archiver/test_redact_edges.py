"""Edges of redaction the broad properties reach only by luck: numbers at the very start of
the text, the exact bounds of the generated-key check, and the key file's every branch."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from archiver.redact import RedactKeyError, Redactor, load_key, secret_values

KEY = b"k" * 32
ENGINES = ["auto", "re"]
ACCOUNT = "12345678901234"


def _mark(value: str, rule: str = "configured") -> bytes:
    return Redactor(KEY).placeholder(rule, value.encode())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("text", "out"),
    [
        # a whole document that is the number, with a sign, or a longer number
        (b"12345678901234", b'"%s"'),
        (b"-12345678901234", b'"%s"'),
        (b"[-12345678901234]", b'["%s"]'),
        (b"912345678901234", None),
        (b"1.12345678901234", None),
        (b"12345678901234.5", None),
        (b"12345678901234e5", None),
        (b"12345678901234E+5", None),
        # in text: a dot after a letter, or a letter after it, is no longer number
        (b'"v.12345678901234 end"', b'"v.%s end"'),
        (b'"id 12345678901234X9 end"', b'"id %sX9 end"'),
        (b'"x 12345678901234.x"', b'"x %s.x"'),
        (b'"x 12345678901234eXy"', b'"x %seXy"'),
        # the same value in a string and then in a number: both go
        (b'["12345678901234", 12345678901234]', b'["%s", "%s"]'),
    ],
)
def test_numbers_at_the_edges(engine: str, text: bytes, out: bytes | None) -> None:
    got = Redactor(KEY, [ACCOUNT], engine=engine).redact_json(text)
    assert got == (text if out is None else out.replace(b"%s", _mark(ACCOUNT)))
    orjson.loads(got)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("value", "text"),
    [
        # values made of number characters that are not numbers themselves fire anywhere,
        # and the whole number that holds them is replaced
        ("-0.123456789012", b"[-0.1234567890123]"),
        ("1.5E-12345678", b"[21.5E-123456789]"),
    ],
)
def test_a_value_inside_a_number_replaces_the_whole_number(engine: str, value: str, text: bytes) -> None:
    got = Redactor(KEY, [value], engine=engine).redact_json(text)
    assert got == b'["' + _mark(value) + b'"]'


# --- the bare AWS secret key: exact bounds of "looks generated" ----------------------------

_LOWER = "bcdefghijklmnopqrstuvwxy"  # 24
_UPPER = "BCDEFGHIJKLMNOPQRSTU"  # 20
_DIGITS = "1234567890"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("key", "caught"),
    [
        ("A" + _LOWER + _DIGITS + "bcdef", True),  # one upper-case letter, at each end of the range
        ("Z" + _LOWER + _DIGITS + "bcdef", True),
        ("b" + _LOWER + _DIGITS + "bcdef", False),
        ("a" + _UPPER + _DIGITS + "BCDEFGHIJ", True),  # one lower-case letter
        ("z" + _UPPER + _DIGITS + "BCDEFGHIJ", True),
        ("B" + _UPPER + _DIGITS + "BCDEFGHIJ", False),
        ("0" + _UPPER[:15] + _LOWER, True),  # one digit
        ("9" + _UPPER[:15] + _LOWER, True),
        ("A" + _UPPER[:15] + _LOWER, False),
        ("ABCDEFGHIJabcdefghi0" * 2, True),  # 20 distinct characters
        ("ABCDEFGHIabcdefghi0" * 2 + "AB", False),  # 19
        ("A/B/C/D" + _LOWER + "12345678" + "E", True),  # three slashes
        ("A/B/C/D/" + _LOWER + "12345678", False),  # four: a path
    ],
)
def test_bare_aws_secret_key_bounds(engine: str, key: str, caught: bool) -> None:
    assert len(key) == 40, key
    out, counts = Redactor(KEY, engine=engine).redact_obj([f"key {key} end"])
    assert (key not in out[0]) is caught and (counts == {"aws_secret": 1}) is caught


# --- the key file --------------------------------------------------------------------------


def test_key_file_folders_are_made_and_the_key_is_linked_from_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a" / "b" / "redact.key"
    sources: list[Path] = []
    real_link = os.link

    def link(src: str, dst: str) -> None:
        sources.append(Path(src))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    key = load_key(path)
    assert len(key) == 32 and path.read_text() == key.hex() + "\n"
    # written beside the key, so linking it into place is one step of one file system
    assert [s.parent for s in sources] == [path.parent]


def test_key_file_race_with_a_broken_first_key_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "redact.key"
    real_link = os.link

    def link(src: str, dst: str) -> None:
        Path(dst).write_text("00" * 8 + "\n")
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(RedactKeyError, match=rf"{path}.*8 bytes.*restore it from a backup"):
        load_key(path)


def test_redact_str_gives_the_string() -> None:
    red = Redactor(KEY, [ACCOUNT])
    assert red.redact_str(f"a {ACCOUNT} b") == f"a {_mark(ACCOUNT).decode()} b"
    assert red.redact_str("nothing here") == "nothing here"


def test_no_secret_values_from_nothing(tmp_path: Path) -> None:
    assert (
        secret_values(None, None) == [] and secret_values("", None) == [] and secret_values(" , ", None) == []
    )


# --- escapes in nested JSON text written by other tools ------------------------------------

TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "x9Y8z7"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_escaped_backslash_before_a_u_escape_is_kept(engine: str) -> None:
    # nested JSON text whose value is a backslash, then the token with its g spelt \u0067
    nested = '{"t": "\\\\\\u0067hp_' + TOKEN[4:] + '"}'
    out, counts = Redactor(KEY, engine=engine).redact_obj([nested])
    assert counts == {"github": 1}
    assert json.loads(out[0])["t"] == "\\" + _mark(TOKEN, "github").decode()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("lone", ["\\ud83d x", "\\u0041\\udc00 x", "\\udc00\\ud83d x"])
def test_lone_surrogates_in_nested_json_text_are_left_as_they_are(engine: str, lone: str) -> None:
    nested = '{"t": "' + lone + " " + TOKEN + '"}'
    out, counts = Redactor(KEY, engine=engine).redact_obj([nested])
    assert counts == {"github": 1} and out[0] == nested.replace(TOKEN, _mark(TOKEN, "github").decode())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("char", ["\U00010000", "\U0010ffff", "😀"])
def test_values_with_characters_outside_the_bmp_in_ascii_json_text(engine: str, char: str) -> None:
    value = f"key-{char}-secret-value"
    nested = json.dumps({"t": f"a {value} b"}, ensure_ascii=True)
    out, counts = Redactor(KEY, [value], engine=engine).redact_obj([nested])
    assert counts == {"configured": 1}
    assert json.loads(out[0])["t"] == f"a {_mark(value).decode()} b"
