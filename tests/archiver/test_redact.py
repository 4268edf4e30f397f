"""Redaction: no planted secret survives, other text is unchanged, JSON stays valid."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutation import examples

from archiver.redact import RedactKeyError, Redactor, load_key, secret_values

KEY = b"k" * 32
FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"

# realistic shapes of the secrets each built-in rule is for (all fake)
SAMPLES = {
    "github": "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "github_pat": "github_pat_11FAKE0000000000000000_fakefakefakefakefake",
    "gitlab": "glpat-FAKEfakeFAKEfake1234",
    "openai": "sk-proj-FAKE0123456789abcdefFAKE0123456789",
    "anthropic": "sk-ant-api03-FAKEfakeFAKEfakeFAKEfake-00",
    "aws": "AKIAFAKEFAKEFAKEFAKE",
    "slack": "xoxb-123456789012-FAKEfakeFAKE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.FAKEsignatureFAKE",
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
}
# secrets recognised by their context: (text, the secret part)
CONTEXT = [
    ("postgres://admin:hunter2-fake@127.0.0.1:5432/app", "hunter2-fake"),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
    (
        "AWS_SECRET_ACCESS_KEY=fakeFAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
        "fakeFAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    ),
    ("export DB_PASSWORD='correct-horse-battery'", "correct-horse-battery"),
    (
        "Authorization: token 0123456789abcdef0123456789abcdef01234567",
        "0123456789abcdef0123456789abcdef01234567",
    ),
    ("mytool --password hunter2hunter2x --verbose", "hunter2hunter2x"),
    ("mysql -u root -pS3cretPassw0rd db", "S3cretPassw0rd"),
    ("docker login -u me -p 'Do0ckerPassw0rd' registry", "Do0ckerPassw0rd"),
]
CONFIGURED = 'my configured "quoted" secret\\value é'

_secrets = st.sampled_from(list(SAMPLES.values()) + [c[1] for c in CONTEXT] + [CONFIGURED])
# filler text: no word an assignment rule takes for a secret's name (`"k0 TOKEN": "…"` is one)
_NAMES = ("passw", "passphrase", "secret", "token", "key", "credential", "auth", "pwd")
_plain = st.text(st.characters(codec="utf-8", exclude_characters=":@=/\\-_."), max_size=30).filter(
    lambda s: not any(n in s.lower() for n in _NAMES)
)


def survives(value: str, text: str) -> bool:
    """The configured value is still in the text where the rules say it must go: anywhere,
    except that a value made of digits inside a longer number is a different number."""
    if not re.fullmatch(r"[0-9](?:[0-9 +\-.,:/]*[0-9])?", value):
        return value in text
    return (
        re.search(
            r"(?<![0-9])(?<![0-9][.])" + re.escape(value) + r"(?![0-9])(?![.][0-9])(?![eE][-+0-9])", text
        )
        is not None
    )


def _plant(secret: str) -> str:
    for text, part in CONTEXT:
        if part == secret:
            return text
    return secret


@st.composite
def _docs_with_secrets(draw: st.DrawFn) -> tuple[Any, list[str], list[str]]:
    planted: list[str] = []
    fillers: list[str] = []

    def string() -> str:
        a, b = draw(_plain), draw(_plain)
        fillers.extend(x for x in (a, b) if x.strip())
        if draw(st.booleans()):
            secret = draw(_secrets)
            planted.append(secret)
            return f"{a} {_plant(secret)} {b}"
        return a + b

    def value(depth: int) -> Any:
        kind = draw(st.integers(0, 4 if depth < 3 else 2))
        if kind == 0:
            return string()
        if kind == 1:
            return draw(
                st.none()
                | st.booleans()
                | st.integers(-(2**63), 2**63 - 1)
                | st.floats(allow_nan=False, allow_infinity=False)
            )
        if kind == 2:
            return string()
        if kind == 3:
            return [value(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        return {f"k{i} {string()}": value(depth + 1) for i in range(draw(st.integers(0, 3)))}

    return value(0), planted, fillers


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [s for x in obj for s in _strings(x)]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in [k, *_strings(v)]]
    return []


@settings(max_examples=examples(300), deadline=None)
@given(_docs_with_secrets())
def test_no_planted_secret_survives(case: tuple[Any, list[str], list[str]]) -> None:
    doc, planted, fillers = case
    red = Redactor(KEY, [CONFIGURED])
    out, counts = red.redact_obj(doc)
    text = "\x00".join(_strings(out))
    for secret in planted:
        assert secret not in text
    for filler in fillers:
        assert filler in text
    assert sum(counts.values()) >= len(planted)
    assert red.redact_obj(out)[0] == out, "redaction is idempotent"


@settings(max_examples=examples(300), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=40),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
        max_leaves=20,
    )
)
def test_text_without_secrets_is_unchanged(doc: Any) -> None:
    out, counts = Redactor(KEY, [CONFIGURED]).redact_obj(doc)
    assert out == doc and counts == {}


@settings(max_examples=examples(200), deadline=None)
@given(
    st.text(alphabet='\\"\n\tbnu0123abcdefghijklmnopq\x01\x1f', max_size=30),
    st.text(alphabet='\\"\n\tbnu0123abcdefghijklmnopq', min_size=12, max_size=14),
)
def test_configured_values_next_to_escapes(noise: str, value: str) -> None:
    red = Redactor(KEY, [value])
    out, _ = red.redact_obj([noise + value + noise, {value: noise}])
    assert not survives(value, json.dumps(out)) and not survives(value, orjson.dumps(out).decode())


# secrets in the shapes shell, .env, YAML, code and HTTP headers give them: (text, the secret)
QUOTED = [
    ('export PASSWORD="hunter2hunter2x"', "hunter2hunter2x"),
    ('password = "pa55word-xyz"', "pa55word-xyz"),
    ('export SECRET_KEY="django-insecure-abcdefgh123"', "django-insecure-abcdefgh123"),
    ('password: "yaml-pa55word"', "yaml-pa55word"),
    ('curl -H "X-Api-Key: 8f14e45fceea167a5a36dedd4bea2543"', "8f14e45fceea167a5a36dedd4bea2543"),
    ('curl -H "api-key: 8f14e45fceea167a5a36dedd4bea2543"', "8f14e45fceea167a5a36dedd4bea2543"),
    ('export OPENAI_API_KEY="sk-proj-abc"', "sk-proj-abc"),
    ('{"api_key": "abcdefghijk12345"}', "abcdefghijk12345"),
]
# code that names a secret without holding one: left as it is
CODE = [
    "password = input()",
    "password: str",
    'password = getpass.getpass("pw: ")',
    "token: Optional[str] = None",
    "def set_password(self, password):",
    'api_key = os.getenv("OPENAI_API_KEY")',
    "password=$DB_PASSWORD",
]


def _nest(text: str, depth: int) -> str:
    # the text as JSON text inside a string, `depth` times over
    for _ in range(depth):
        text = json.dumps({"v": text})
    return text


@pytest.mark.parametrize("engine", ["auto", "re"])
@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize(("text", "secret"), QUOTED)
def test_quoted_values_are_redacted(text: str, secret: str, depth: int, engine: str) -> None:
    out, counts = Redactor(KEY, engine=engine).redact_obj({"k": _nest(text, depth)})
    assert secret not in json.dumps(out) and counts.get("assignment") == 1


@pytest.mark.parametrize("text", CODE)
def test_code_naming_a_secret_is_unchanged(text: str) -> None:
    assert Redactor(KEY).redact_obj({"k": text}) == ({"k": text}, {})


# a number, a quantity or a range: a count, never a secret (left alone by the assignment rules)
_QUANTITY = r"~?\d[\d.,_]*(?:[kmgt]b?|b|ms|s|%|x)?"
NUMBERISH = re.compile(rf"{_QUANTITY}(?:(?:-|\u2013|\.\.|~|/){_QUANTITY})?", re.I)
_value = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+/=@%", min_size=8
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from(["PASSWORD", "db_password", "SECRET_KEY", "api_key", "X-Api-Key", "apiKey", "TOKEN"]),
    st.sampled_from(["=", " = ", ": ", ":"]),
    st.sampled_from(["", "'", '"', "`"]),
    _value.filter(lambda v: v[0] not in "$[{(<'`" and not v[0].isalpha() and not NUMBERISH.fullmatch(v))
    | _value.map(lambda v: "x" + v),
    st.integers(0, 2),
)
def test_assignments_in_any_quoting_and_nesting(
    key: str, sep: str, quote: str, value: str, depth: int
) -> None:
    text = _nest(f"export {key}{sep}{quote}{value}{quote} && run", depth)
    out, _ = Redactor(KEY).redact_obj([text])
    assert value not in json.dumps(out) and value not in orjson.dumps(out).decode()


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_configured_values_with_quotes_inside_nested_json_text(depth: int) -> None:
    value = 'quo"te\\back-secret-xyz'
    out, counts = Redactor(KEY, [value]).redact_obj({"k": _nest(f"see {value} here", depth)})
    assert counts == {"configured": 1}
    text = json.dumps(out)
    form = value
    for _ in range(depth + 2):  # the value as each level of JSON text shows it
        assert form not in text
        form = json.dumps(form)[1:-1]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_rule_catches_its_secret(name: str) -> None:
    secret = SAMPLES[name]
    out, counts = Redactor(KEY).redact_obj({"k": f"see {secret} here"})
    assert secret not in out["k"] and out["k"].startswith("see [REDACTED:")
    assert sum(counts.values()) == 1


def test_placeholder_is_stable_and_keyed() -> None:
    secret = SAMPLES["github"]
    a = Redactor(KEY).redact_obj([secret, {"x": secret}])[0]
    b = Redactor(KEY).redact_obj(secret)[0]
    c = Redactor(b"other-key" * 4).redact_obj(secret)[0]
    assert a[0] == a[1]["x"] == b != c
    assert b.startswith("[REDACTED:github:") and len(b) == len("[REDACTED:github:]") + 12


def test_keys_are_redacted_too() -> None:
    out, counts = Redactor(KEY).redact_obj({SAMPLES["aws"]: 1})
    assert list(out) == [Redactor(KEY).placeholder("aws", SAMPLES["aws"].encode()).decode()]
    assert counts == {"aws": 1}


def test_short_configured_values_are_refused(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="archiver.redact"):
        red = Redactor(KEY, ["tiny-val", "long-enough-value"])
    assert red.refused == ["tiny-val"] and red.values == ("long-enough-value",)
    assert "refused" in caplog.text and "tiny-val" not in caplog.text
    assert red.redact_obj("a tiny-val one")[0] == "a tiny-val one"


def test_secrets_fixture_has_nothing_left() -> None:
    fx = orjson.loads((FIXTURES / "secrets.json").read_bytes())
    out, counts = Redactor(KEY, ["hunter2-fake-pw-long"]).redact_obj(fx)
    text = orjson.dumps(out).decode()
    for s in (
        "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
        "sk-proj-FAKE0123456789abcdefFAKE",
        "AKIAFAKEFAKEFAKEFAKE1",
        "fakeFAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
        "hunter2-fake@",
        "MIIEfake",
    ):
        assert s not in text, s
    assert {"github", "openai", "aws", "assignment", "key_block", "url_userinfo"} <= set(counts)


def test_provider_api_key_is_redacted() -> None:
    providers = {"providers": [{"id": "x", "options": {"apiKey": "sk-live-0123456789abcdefXYZ"}}]}
    out, _ = Redactor(KEY).redact_obj(providers)
    assert "0123456789abcdef" not in orjson.dumps(out).decode()


def test_key_file_is_created_once(tmp_path: Path) -> None:
    path = tmp_path / "d" / "redact.key"
    k1 = load_key(path)
    assert load_key(path) == k1 and len(k1) == 32
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("content", ["", "\n", "abcd\n", "zz-not-hex\n", "00" * 31])
def test_short_or_broken_key_file_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "redact.key"
    path.write_text(content)
    with pytest.raises(RedactKeyError, match=str(path)):
        load_key(path)
    assert path.read_text() == content, "a refused key file is left as it was"


def test_new_key_is_written_whole_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "keys" / "redact.key"
    seen: list[str] = []
    real_link = os.link

    def link(src: str, dst: str) -> None:  # what is linked into place is already complete
        seen.append(Path(src).read_text())
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    key = load_key(path)
    assert len(key) == 32 and seen == [key.hex() + "\n"]
    assert [p.name for p in path.parent.iterdir()] == ["redact.key"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_archive_command_refuses_an_empty_key_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cli import app

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "redact.key").write_text("")
    res = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "archive", "ses_abc"])
    assert res.exit_code == 2 and "fewer than 32" in res.output and "Traceback" not in res.output


def test_secret_values_from_setting_and_file(tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_text("from-file-value-1\n\n  from-file-value-2  \n")
    assert secret_values("a-b, c ,", f) == ["a-b", "c", "from-file-value-1", "from-file-value-2"]


@settings(max_examples=examples(200), deadline=None)
@given(_docs_with_secrets())
def test_both_engines_agree(case: tuple[Any, list[str], list[str]]) -> None:
    fast = Redactor(KEY, [CONFIGURED])
    plain = Redactor(KEY, [CONFIGURED], engine="re")
    assert plain.engine == "re"
    data = orjson.dumps(case[0])
    assert fast.redact_bytes(data) == plain.redact_bytes(data)


def test_json_fields_with_secret_keys() -> None:
    red = Redactor(KEY)
    doc = {
        "options": {"apiKey": "sk-fake-not-a-secret", "baseURL": "http://127.0.0.1:1/v1"},
        "tokens": {"input": 123456789, "cache": {"read": 0}},
        "author": "JaneDoeSmith",
        "nested": '{"password": "s3cr3tpassw0rd"}',
        "auth": "Basic dXNlcjpwYXNzd29yZA==",
    }
    out, _ = red.redact_obj(doc)
    assert out["options"]["apiKey"].startswith("[REDACTED:assignment:")
    assert out["tokens"] == doc["tokens"] and out["author"] == "JaneDoeSmith"
    assert "s3cr3tpassw0rd" not in out["nested"] and "dXNlcjpw" not in out["auth"]
    assert out["options"]["baseURL"] == doc["options"]["baseURL"]


_secret_keys = st.sampled_from(
    [
        "password",
        "apiKey",
        "api_key",
        "secret",
        "token",
        "tokens",
        "auth_token",
        "authorization",
        "access_key",
        "private_key",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.dictionaries(
        _secret_keys,
        st.none()
        | st.booleans()
        | st.integers(-(2**63), 2**63 - 1)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20)
        | st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3),
        max_size=6,
    )
)
def test_secret_looking_keys_keep_json_valid(doc: dict[str, Any]) -> None:
    out, _ = Redactor(KEY).redact_obj(doc)  # parses back: the text stayed valid JSON
    assert set(out) == set(doc)
    for k, v in doc.items():
        if not isinstance(v, str):
            assert out[k] == v, "only string values are ever replaced"


def test_key_file_race_on_first_creation_uses_the_first_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another process links its key into place between our read and our link: ours is dropped
    path = tmp_path / "redact.key"
    theirs = "ab" * 32
    real_link = os.link

    def link(src: str, dst: str) -> None:
        Path(dst).write_text(theirs + "\n")
        real_link(src, dst)  # raises FileExistsError, as it would

    monkeypatch.setattr(os, "link", link)
    assert load_key(path) == bytes.fromhex(theirs)
    assert path.read_text() == theirs + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["redact.key"], "no temporary file is left"


def test_key_file_race_with_a_broken_first_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "redact.key"
    real_link = os.link

    def link(src: str, dst: str) -> None:
        Path(dst).write_text("not hex\n")
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(RedactKeyError):
        load_key(path)
    assert [p.name for p in tmp_path.iterdir()] == ["redact.key"]


def test_key_file_on_a_file_system_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "redact.key"
    key = load_key(path)
    assert len(key) == 32 and path.read_text() == key.hex() + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["redact.key"]
    monkeypatch.undo()
    assert load_key(path) == key, "the key written is the key read back"


def test_key_file_write_failure_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail_fsync)
    with pytest.raises(OSError, match="Input/output"):
        load_key(tmp_path / "redact.key")
    assert list(tmp_path.iterdir()) == []


def test_two_keys_make_two_placeholders_and_a_key_of_32_bytes_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "redact.key"
    path.write_text("0f" * 32 + "\n")
    assert load_key(path) == bytes.fromhex("0f" * 32)
    red = Redactor(load_key(path))
    assert red.placeholder("x", b"one-secret") != red.placeholder("x", b"two-secret")
    assert red.placeholder("x", b"one-secret") != Redactor(KEY).placeholder("x", b"one-secret")
    assert red.placeholder("x", b"one-secret") != red.placeholder("y", b"one-secret")
