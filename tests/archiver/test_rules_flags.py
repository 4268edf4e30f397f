"""Redaction of secrets passed on command lines, quoted values and tokens next to non-ASCII
text: the secret goes, every other byte (quotes, flags, ports, file names) stays."""

from __future__ import annotations

import json
import re

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mutation import examples

from archiver.redact import Redactor

KEY = b"k" * 32
ENGINES = ["auto", "re"]
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+:[0-9a-f]{12}\]")

# (text, the secret, the rule that catches it)
CAUGHT = [
    ("--password hunter2hunter2", "hunter2hunter2", "flag"),
    ("mytool --token abcdef0123456789 --verbose", "abcdef0123456789", "flag"),
    ("deploy --api-key k3yk3yk3yk3y --region eu", "k3yk3yk3yk3y", "flag"),
    ("app --db-password 'hunter2hunter2' run", "hunter2hunter2", "flag"),
    ("vault -token s.abcdefghijkl status", "s.abcdefghijkl", "flag"),
    ("cli --client-secret=abcdef0123456789", "abcdef0123456789", "assignment"),
    ("gpg --batch --passphrase S3cretPassphrase -d f.gpg", "S3cretPassphrase", "flag"),
    ("rclone --s3-secret-access-key abcdEFGH0123ijkl ls r:", "abcdEFGH0123ijkl", "flag"),
    ("s3cmd --secret_key abcdEFGH0123ijkl ls", "abcdEFGH0123ijkl", "flag"),
    ("GPG_PASSPHRASE=S3cretPassphrase make sign", "S3cretPassphrase", "assignment"),
    ("mysql -u root -pS3cretPassw0rd db", "S3cretPassw0rd", "command"),
    ("mysqldump -h 127.0.0.1 -P 3306 -u root -p'S3cretPassw0rd' app", "S3cretPassw0rd", "command"),
    ('mysql -e "select 1" -pS3cretPassw0rd', "S3cretPassw0rd", "command"),
    ("mariadb -u root -pS3cretPassw0rd", "S3cretPassw0rd", "command"),
    ("docker login -u me -p S3cretPassw0rd registry.example", "S3cretPassw0rd", "command"),
    ("podman login -pS3cretPassw0rd quay.io", "S3cretPassw0rd", "command"),
    ("sshpass -p S3cretPassw0rd ssh me@host", "S3cretPassw0rd", "command"),
    ("curl -u user:S3cretPassw0rd https://example.test/api", "S3cretPassw0rd", "command"),
    ("curl -s --user 'user:S3cretPassw0rd' https://example.test", "S3cretPassw0rd", "command"),
    ("redis-cli -h cache -a S3cretPassw0rd ping", "S3cretPassw0rd", "command"),
    ("openssl enc -aes256 -pass pass:S3cretPassw0rd -in f", "S3cretPassw0rd", "command"),
    ("PGPASSWORD=S3cretPassw0rd psql -h db -U app", "S3cretPassw0rd", "assignment"),
    ("MYSQL_PWD=S3cretPassw0rd mysql -u root", "S3cretPassw0rd", "assignment"),
]

# command lines that hold no secret: left exactly as they are
LEFT_ALONE = [
    "--password-file /run/secrets/db",
    "rsync --password-file=/run/secrets/rsync src/ dst/",
    "docker login -u me --password-stdin registry.example",
    "ls -p",
    "grep -p pattern file.txt",
    "python -m pytest -p no:cacheprovider tests/",
    "tar -xzpf x.tgz",
    "mkdir -p /var/lib/mysql",
    "ssh -p 2222 me@host",
    "docker run --name login -p 8080:80 nginx",
    "gh auth login -p https",
    "mysql -u root -p app_db",
    "curl -u user https://example.test",
    "curl --user-agent 'a:b' https://example.test",
    "pg_dump --no-password production_db",
    "ansible-playbook --ask-vault-password site.yml",
    "  --token TOKEN         the API token",
    "  --password PASSWORD   the password",
    "pass it with the --token option, then run",
    "see `the --token option`",
    "`--password PASSWORD`: the password",
    "the per-token cost and the non-token characters",
    "a two-token keyword, a multi-token prompt",
    "git log -p --stat",
    "patch -p1 < fix.diff",
    "openssl enc -pass env:DB_PASS -in f",
    "openssl enc -passin file:/run/secrets/pw",
    "mysql -u root -p$MYSQL_PASSWORD db",
    "curl -u user:$API_PASSWORD https://example.test",
    "sshpass -e ssh me@host",
]


def _nest(text: str, depth: int) -> str:
    # the text as JSON text inside a string, `depth` times over
    for _ in range(depth):
        text = json.dumps({"v": text})
    return text


def _redact(text: str, engine: str) -> tuple[str, dict[str, int]]:
    out, counts = Redactor(KEY, engine=engine).redact_obj({"k": text})
    return out["k"], counts


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "secret", "rule"), CAUGHT)
def test_command_line_secrets_are_redacted(text: str, secret: str, rule: str, engine: str) -> None:
    out, counts = _redact(text, engine)
    placeholder = Redactor(KEY).placeholder(rule, secret.encode()).decode()
    assert out == text.replace(secret, placeholder), "only the secret is replaced"
    assert counts == {rule: 1}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(("text", "secret", "rule"), CAUGHT)
def test_command_line_secrets_in_nested_json_text(
    text: str, secret: str, rule: str, depth: int, engine: str
) -> None:
    out, _ = _redact(_nest(text, depth), engine)
    assert secret not in out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize("text", LEFT_ALONE)
def test_command_lines_without_secrets_are_unchanged(text: str, depth: int, engine: str) -> None:
    nested = _nest(text, depth)
    assert _redact(nested, engine) == (nested, {})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "text",
    [
        "export PASSWORD='hunter2hunter2' && run",
        "PASSWORD=`hunter2hunter2`",
        "db_password: 'hunter2hunter2'",
        "--password 'hunter2hunter2'",
        "mysql -p'hunter2hunter2' db",
        "run `--password hunter2hunter2` first",
        "set `PASSWORD=hunter2hunter2` in .env",
        "log in with `sshpass -p hunter2hunter2`.",
    ],
)
def test_quotes_and_backquotes_around_values_are_kept(text: str, engine: str) -> None:
    out, counts = _redact(text, engine)
    rule = next(iter(counts))
    placeholder = Redactor(KEY).placeholder(rule, b"hunter2hunter2").decode()
    assert out == text.replace("hunter2hunter2", placeholder)


TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "x9Y8z7"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize(
    ("before", "after"),
    [("", "é"), ("中", ""), ("中文", "é fin"), ("token: ", " …"), ("ß", "\u00a0more"), ("🔑", "🔑")],
)
def test_github_token_next_to_non_ascii_text(before: str, after: str, depth: int, engine: str) -> None:
    # a token body is ASCII letters and digits: the token ends where other text starts, and
    # the text around it is kept (escaped as \\uXXXX in nested JSON text, raw UTF-8 otherwise)
    text = _nest(before + TOKEN + after, depth)
    out, counts = _redact(text, engine)
    placeholder = Redactor(KEY).placeholder("github", TOKEN.encode()).decode()
    assert out == text.replace(TOKEN, placeholder) and counts == {"github": 1}


_SPELLINGS = [
    ("--{name} {q}{v}{q}", "flag"),
    ("--{name}={q}{v}{q}", "flag"),
    ("-{name} {q}{v}{q}", "flag"),
    ("mysql -u root -p{q}{v}{q} app", "mysql"),
    ("mysqldump --single-transaction -h db -p{q}{v}{q} app", "mysql"),
    ("docker login -u me -p {q}{v}{q} registry.example", "-p"),
    ("docker login -u me -p{q}{v}{q}", "-p"),
    ("sshpass -p {q}{v}{q} ssh me@host", "-p"),
    ("sshpass -p{q}{v}{q} ssh me@host", "-p"),
    ("curl -u me:{v} https://example.test", "curl"),
    ("redis-cli -a {q}{v}{q} ping", "-p"),
]
_NAMES = [
    "password",
    "passwd",
    "passphrase",
    "db-password",
    "token",
    "github-token",
    "api-key",
    "api_key",
    "apikey",
    "secret",
    "secret-key",
    "s3-secret-access-key",
]
_values = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+/=@%!#^*~,:",
    min_size=8,
    max_size=40,
).filter(
    # left out: values the rule takes for a metavar or a word of prose, and a leading `:` or
    # `=` (`--password :x` reads as `password: x`, and x alone is replaced)
    lambda v: (
        v[0] not in "-$[{(<:=,"
        and not re.fullmatch(
            r"(?:[A-Z][A-Z_-]*|(?:flag|option|argument|parameter|instead|value)s?)[,.;:)]?", v
        )
    )
)


@settings(max_examples=examples(400), deadline=None)
@given(
    st.sampled_from(_SPELLINGS),
    st.sampled_from(_NAMES),
    st.sampled_from(["", "'", '"', "`"]),
    _values,
    st.sampled_from(["", "$ ", "run: ", "ok && "]),
    st.sampled_from(["", " && echo done", "\nnext line"]),
    st.integers(0, 2),
)
def test_flag_spellings(
    spelling: tuple[str, str], name: str, quote: str, value: str, pre: str, post: str, depth: int
) -> None:
    template, _ = spelling
    text = pre + template.format(name=name, q=quote, v=value) + post
    assume(text.count(value) == 1)
    nested = _nest(text, depth)
    fast, _ = _redact(nested, "auto")
    plain, _ = _redact(nested, "re")
    assert fast == plain, "hyperscan and plain re agree"
    assert value not in fast and value not in orjson.dumps(fast).decode()
    if depth == 0:
        # everything but the value is kept: flags, quotes, the rest of the line
        assert _PLACEHOLDER.sub("<R>", fast) == text.replace(value, "<R>")


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from(
        [
            "ls -p {v}",
            "grep -p {v} file",
            "python -m pytest -p {v}",
            "tar -xzpf {v}",
            "mkdir -p {v}",
            "ssh -p {v} host",
            "docker run -p {v} nginx",
            "git log -p {v}",
            "--password-file {v}",
            "--token-file={v}",
            "--passphrase-file {v}",
            "--secret-key-file {v}",
            "--no-password {v}",
            "mysql -u root -p {v}",
            "login -p {v}",
        ]
    ),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./", min_size=1, max_size=30),
)
def test_options_that_are_not_passwords_are_unchanged(template: str, value: str) -> None:
    text = template.format(v=value)
    assert _redact(text, "auto") == (text, {}) == _redact(text, "re")


def test_the_fast_path_is_hyperscan_where_installed() -> None:
    # the "auto" cases above compare hyperscan with plain re only when hyperscan is there
    pytest.importorskip("hyperscan")
    assert Redactor(KEY).engine == "hyperscan" and Redactor(KEY, engine="re").engine == "re"


_PIECES = st.sampled_from(
    [
        "--password ",
        "--db-token=",
        "-secret ",
        "mysql ",
        " -p",
        "docker login ",
        " -p ",
        "sshpass -p ",
        "curl -u a:",
        "redis-cli -a ",
        "-passin pass:",
        "PASSWORD='",
        "'",
        "`",
        '"',
        "\\",
        '\\"',
        "\n",
        " ",
        "é",
        "中",
        "\\u00e9",
        "hunter2hunter2",
        "ABC",
        "$X",
        "; ",
        "|",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join), st.integers(0, 2))
def test_mixed_command_lines_stay_valid_and_engines_agree(text: str, depth: int) -> None:
    data = orjson.dumps({"k": _nest(text, depth)})
    fast = Redactor(KEY).redact_bytes(data)
    plain = Redactor(KEY, engine="re").redact_bytes(data)
    assert fast == plain
    out = orjson.loads(fast.data)  # still valid JSON
    for _ in range(depth):  # nested JSON text is still valid JSON text
        out = {"k": json.loads(out["k"])["v"]}
