"""Redaction keeps the document valid and its shape, and leaves no secret the rules name:
numbers, escapes, overlapping finds, and the spellings an attacker or a careless tool uses."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from archiver.redact import Redactor

KEY = b"k" * 32
ENGINES = ["auto", "re"]
TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "x9Y8z7"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _nest(text: str, depth: int, *, ascii_only: bool = False) -> str:
    for _ in range(depth):
        text = json.dumps({"v": text}, ensure_ascii=ascii_only)
    return text


def _redact(obj: Any, engine: str = "auto", values: tuple[str, ...] = ()) -> tuple[Any, dict[str, int]]:
    return Redactor(KEY, values, engine=engine).redact_obj(obj)


# --- numbers -------------------------------------------------------------------------------

ACCOUNT = "12345678901234"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_configured_number_replaces_the_whole_number_by_a_string(engine: str) -> None:
    doc = {"n": 12345678901234, "neg": -12345678901234, "list": [1, 12345678901234, 2]}
    out, counts = _redact(doc, engine, (ACCOUNT,))
    mark = Redactor(KEY).placeholder("configured", ACCOUNT.encode()).decode()
    assert out == {"n": mark, "neg": mark, "list": [1, mark, 2]}
    assert counts == {"configured": 3}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_configured_number_never_fires_inside_a_longer_number(engine: str) -> None:
    doc = {
        "longer": [912345678901234, 123456789012345, 12345678901234.5, 0.12345678901234],
        "text": "ids 912345678901234 and 123456789012345 and 1.12345678901234",
        "exp": 1.2345678901234e20,
    }
    assert _redact(doc, engine, (ACCOUNT,)) == (doc, {})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_configured_number_in_text_is_replaced_there(engine: str) -> None:
    out, _ = _redact({"t": f"account {ACCOUNT}, thanks", "k": {f"acct-{ACCOUNT}": True}}, engine, (ACCOUNT,))
    assert ACCOUNT not in orjson.dumps(out).decode()
    assert out["t"].startswith("account [REDACTED:configured:") and out["t"].endswith(", thanks")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_value_that_would_span_json_structure_is_left_alone(engine: str) -> None:
    doc = {"a": [123456, 789012], "b": [123456, "789012"], "t": True, "n": None}
    out, counts = _redact(doc, engine, ("123456,789012", '123456,"789012', "true,null,true"))
    assert (out, counts) == (doc, {})


# --- escapes -------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [1, 2])
def test_a_github_token_spelt_with_u_escapes_in_nested_json_text(engine: str, depth: int) -> None:
    # another tool wrote the nested JSON text escaping every character it liked
    inner = '{"t": "\\u0067hp_' + TOKEN[4:] + '"}'
    text = _nest(inner, depth - 1)
    out, counts = _redact({"k": text}, engine)
    for _ in range(depth - 1):
        out = {"k": json.loads(out["k"])["v"]}
    decoded = json.loads(out["k"])["t"]
    assert decoded == Redactor(KEY).placeholder("github", TOKEN.encode()).decode()
    assert counts == {"github": 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_escaped_slashes_and_upper_case_hex(engine: str) -> None:
    text = '{"url": "https:\\/\\/me:hunter2hunter2@db.example\\/x", "t": "\\u0047\\u0048P_' + TOKEN[4:] + '"}'
    out, _ = _redact({"k": text}, engine)
    inner = json.loads(out["k"])
    assert "hunter2hunter2" not in inner["url"] and inner["url"].endswith("@db.example/x")
    assert inner["t"] == "GHP_" + TOKEN[4:], "upper-case GHP_ is no token prefix: left as it is"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "value", ["pässwörd-secret-✓", "emoji-🔑-secret-key", "中文密码秘密的值很长很长很长"]
)
def test_unicode_values_in_ascii_escaped_nested_json_text(engine: str, value: str) -> None:
    for depth in (1, 2):
        text = _nest(f"x {value} y", depth, ascii_only=True)
        out, counts = _redact({"k": text}, engine, (value,))
        assert counts == {"configured": 1}
        inner = out["k"]
        for _ in range(depth):
            inner = json.loads(inner)["v"]
        assert value not in inner and inner.startswith("x [REDACTED:configured:")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("text", "value"),
    [
        # orjson writes \x1f as \u001f: each value would start inside that escape
        ("\x1fabcdefghijkl", "u001fabcdefghijkl"),
        ("\x1fabcdefghijkl", "001fabcdefghijkl"),
        ("\x1fabcdefghijkl", "01fabcdefghijkl"),
        ("\x1fabcdefghijkl", "1fabcdefghijkl"),
        ("\x1fabcdefghijkl", "fabcdefghijkl"),
        ("\nabcdefghijklm", "nabcdefghijklm"),  # on the n of \n
        ("\tabcdefghijklm", "tabcdefghijklm"),
        ("\\\nabcdefghijklm", "nabcdefghijklm"),  # \\ then \n
    ],
)
def test_a_value_never_starts_inside_an_escape(engine: str, text: str, value: str) -> None:
    doc = ["x" + text, {text: text}, text]
    assert value not in json.dumps(doc, ensure_ascii=False).replace("\\\\", "")[:0] + text
    assert _redact(doc, engine, (value,)) == (doc, {}), "the document holds no such value"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "doc",
    [
        ["\\nabcdefghijklm"],  # a literal backslash, then the value: it is there
        ["\\\\nabcdefghijklm"],
        ["\\u001fabcdefghijkl"],
    ],
)
def test_a_value_after_an_escaped_backslash_is_found(engine: str, doc: list[str]) -> None:
    value = doc[0].lstrip("\\")
    out, counts = _redact(doc, engine, (value,))
    assert value not in out[0] and counts == {"configured": 1}


# --- configured values ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_a_configured_value_with_upper_case_letters_is_matched_exactly(engine: str) -> None:
    value = "MyS3cretValueXYZ"
    out, counts = _redact([value, value.lower(), value.upper()], engine, (value,))
    assert out[0].startswith("[REDACTED:configured:") and out[1:] == [value.lower(), value.upper()]
    assert counts == {"configured": 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_value_that_begins_another_leaves_no_tail(engine: str) -> None:
    short, longer = "abcdefghijkl", "abcdefghijklMNOPQRSTUV"
    out, counts = _redact([f"x {longer} y", f"x {short} y"], engine, (short, longer))
    mark = Redactor(KEY).placeholder
    assert out == [
        f"x {mark('configured', longer.encode()).decode()} y",
        f"x {mark('configured', short.encode()).decode()} y",
    ]
    assert counts == {"configured": 2}


@pytest.mark.parametrize("engine", ENGINES)
def test_placeholders_depend_on_the_secret_not_on_its_spelling(engine: str) -> None:
    a, b = 'first"secret-value', 'second"secret-value'
    out, _ = _redact([a, b, _nest(a, 1), _nest(a, 2)], engine, (a, b))
    pa, pb = out[0], out[1]
    assert pa != pb and pa.startswith("[REDACTED:configured:") and pb.startswith("[REDACTED:configured:")
    assert json.loads(out[2])["v"] == pa and json.loads(json.loads(out[3])["v"])["v"] == pa
    other = Redactor(b"x" * 32, (a,)).redact_obj(a)[0]
    assert other != pa, "the hash is keyed"


# --- secrets side by side or overlapping ---------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_two_secrets_side_by_side_both_go(engine: str) -> None:
    v1, v2 = "first-secret-AAAA", "second-secret-BBBB"
    out, counts = _redact([v1 + v2, TOKEN + TOKEN, f"{TOKEN} {v1}"], engine, (v1, v2))
    text = orjson.dumps(out).decode()
    for part in (v1, v2, TOKEN, TOKEN[4:], "AAAA", "BBBB", "x9Y8z7"):
        assert part not in text
    assert out[0].count("[REDACTED:configured:") == 2
    assert sum(counts.values()) >= 5


@pytest.mark.parametrize("engine", ENGINES)
def test_overlapping_secrets_leave_no_part_of_either(engine: str) -> None:
    v1, v2 = "XXXXsecret-overlap", "secret-overlapYYYY"
    out, counts = _redact([f"<{v1[:4]}{v2}>"], engine, (v1, v2))
    assert out[0].startswith("<[REDACTED:configured:") and out[0].endswith("]>")
    assert "XXXX" not in out[0] and "YYYY" not in out[0] and counts == {"configured": 1}


# --- the gaps an audit found ---------------------------------------------------------------

GAPS = [
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f"the key is\n{AWS_SECRET}\nkeep it", AWS_SECRET),
    (f"{AWS_SECRET}", AWS_SECRET),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGVfakefakefake\n=abcd\n"
        "-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGVfakefakefake",
    ),
    ("redis://:s3cretRedisPw@cache.internal:6379/0", "s3cretRedisPw"),
    ("postgres://app:pa/ss@word1@db.internal:5432/app", "pa/ss@word1"),
    ("mongodb://root:ab/cd/ef@[::1]:27017", "ab/cd/ef"),
    ("$ ls\nfile\nmysql -u root -pS3cretPassw0rd app\n", "S3cretPassw0rd"),
    ("out\ncurl -u admin:S3cretPassw0rd https://x.example\n", "S3cretPassw0rd"),
    ("out\n--password S3cretPassw0rd\n", "S3cretPassw0rd"),
    ("out\n\t--db-password S3cretPassw0rd\n", "S3cretPassw0rd"),
]
LEFT_ALONE = [
    "0123456789abcdef0123456789abcdef01234567",  # a git commit id
    "src/components/Header/index/FooBar/pages",  # a path of 40 characters
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",  # longer than 40
    "http://localhost:4873/@babel/core",  # a port and a scoped package
    "https://registry.example:8443/path@v1",
    "pip install git+https://github.com/org/repo@v1.2",
    "see mysql(1) and curl(1) on this line\nnext",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize(("text", "secret"), GAPS)
def test_gaps_are_closed(engine: str, depth: int, text: str, secret: str) -> None:
    out, counts = _redact({"k": _nest(text, depth)}, engine)
    inner = out["k"]
    for _ in range(depth):
        inner = json.loads(inner)["v"]
    assert secret not in inner and counts


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("text", LEFT_ALONE)
def test_look_alikes_are_left_alone(engine: str, text: str) -> None:
    assert _redact({"k": text}, engine) == ({"k": text}, {})


def test_url_password_keeps_the_user_and_host() -> None:
    out, _ = _redact("redis://:s3cretRedisPw@cache.internal:6379/0")
    assert out.startswith("redis://:[REDACTED:url_userinfo:") and out.endswith("]@cache.internal:6379/0")
    out, _ = _redact("git+https://me:tok3n-abc@github.com/org/repo@v1")
    assert out.endswith("]@github.com/org/repo@v1") and "tok3n-abc" not in out
