"""Code and masked values read in a session are no secrets: a path (`anchor_spl::token::{self,
…}`), a field's type (`token_account: Pubkey,`, `vault: Account<'info, Vault>`), a status word
(`TOKEN_STATUS: missing`), a token a tool printed masked (`Token: gho_****`) and a dependency's
version range (`"@solana/spl-token": "^0.4.13"`) and the value an example stands for
(`OWM_API_KEY=your_key_here`, `"test-key"`) were redacted as assignments in transcripts users
published; a value that is a secret still is, and the quote
that closes the text around it is kept."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.redact import Redactor

KEY = b"k" * 32
ENGINES = ["auto", "re"]

CODE = [
    "use anchor_spl::token::{self, Token, TokenAccount};",
    "use crate::secret::{Vault, open};",
    "    pub provider_token_account: Pubkey,",
    "    pub vault_token_account: Account<'info, TokenAccount>,",
    "    pub api_key: Option<String>,",
    "  token: string;",
    "  password: String,",
    "  secret: Uint8Array | undefined",
    'if [ -n "$TOKEN" ]; then echo "TOKEN_STATUS: configured"; else echo "TOKEN_STATUS: missing"; fi',
    "token_state=expired",
    "token_count: unknown",
    "  - Token: gho_************************************",
    "api_key = sk-…********",
    '  "@solana/spl-token": "^0.4.13",',
    '  "csrf-token": ">=1.2.0",',
    "secret_version: ~2.1.0",
    "OWM_API_KEY=your_openweathermap_api_key",
    "    OWM_API_KEY=your_key_here,",
    'process.env.OWM_API_KEY = "test-key";',
    "DISCORD_TOKEN=xxxxxxxxxxxx",
    "api_key: placeholder",
]


def _texts(line: str) -> list[bytes]:
    """The line as a tool result holds it, and as JSON text inside a string."""
    doc = {"type": "tool_result", "content": f"1\t{line}\n2\tnext"}
    return [orjson.dumps(doc), orjson.dumps({"content": orjson.dumps(doc).decode()})]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("line", CODE)
def test_code_and_masked_values_are_kept(engine: str, line: str) -> None:
    for text in _texts(line):
        assert Redactor(KEY, engine=engine).redact_json(text) == text


SECRETS = [
    ("token: ghs9Kq2Zr7Lm4Xv8", "ghs9Kq2Zr7Lm4Xv8"),
    ("password = hunter2hunter2", "hunter2hunter2"),
    ('api_key := "a1b2c3d4e5f6g7"', "a1b2c3d4e5f6g7"),
    ("SECRET_KEY=Zm9vYmFyYmF6cXV4", "Zm9vYmFyYmF6cXV4"),
    ("token: Pubkey9xQ2", "Pubkey9xQ2"),
    ("API_KEY=testkey9Kq2Zr7Lm", "testkey9Kq2Zr7Lm"),
    ("API_KEY=yourself9Kq2Zr7", "yourself9Kq2Zr7"),
    ("password: example9Kq2Zr7Lm", "example9Kq2Zr7Lm"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("line", "secret"), SECRETS)
def test_secrets_in_the_same_places_are_still_redacted(engine: str, line: str, secret: str) -> None:
    for text in _texts(line):
        out = Redactor(KEY, engine=engine).redact_json(text)
        assert secret.encode() not in out and b"[REDACTED:assignment:" in out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("end", ["'", "';", "' &&"])
def test_the_quote_around_a_url_is_kept(engine: str, end: str) -> None:
    line = f"RPC='https://rpc.example.com/?api-key=0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b{end}\nPROGRAM='x'"
    for text in _texts(line):
        out = Redactor(KEY, engine=engine).redact_json(text)
        assert b"0e1f2a3b" not in out
        assert b"?api-key=[REDACTED:assignment:" in out
        assert orjson.loads(out)
        # the closing quote is still there, right after the placeholder
        assert b"]'" in out


_ident = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)


@given(_ident, st.sampled_from(["token", "secret", "password", "api_key"]), _ident)
def test_a_rust_path_through_a_secret_word_is_no_assignment(head: str, word: str, tail: str) -> None:
    text = orjson.dumps({"content": f"use {head}::{word}::{{self, {tail}}};"})
    assert Redactor(KEY, engine="re").redact_json(text) == text


# what may follow a type name or an example's value: the end of a field, of a list, of a string
_AFTER_TYPE = [" ", ",", ";", ")", "]", "}", ">", "|", "?", "=", "\n", ""]
_AFTER_EXAMPLE = [" ", ",", ";", ")", "]", "}", "\n", ""]


@pytest.mark.parametrize("after", _AFTER_TYPE)
def test_a_type_name_is_kept_whatever_follows_it(after: str) -> None:
    for text in [orjson.dumps({"content": f"  token: string{after}"}), orjson.dumps({"token": "string"})]:
        assert Redactor(KEY, engine="re").redact_json(text) == text


@pytest.mark.parametrize("after", _AFTER_EXAMPLE)
@pytest.mark.parametrize(
    "value",
    [
        *("your_key_value", "your-key-value", "ab9_c-d_here", "put-it-here", "xxxkey", "placeholder"),
        *("test_key", "test-key", "test_api_key", "test-api-key", "dummy-password", "sample_token"),
    ],
)
def test_an_examples_value_is_kept_whatever_follows_it(value: str, after: str) -> None:
    for text in [orjson.dumps({"content": f"API_KEY={value}{after}"}), orjson.dumps({"api_key": value})]:
        assert Redactor(KEY, engine="re").redact_json(text) == text


@pytest.mark.parametrize("value", ["xxtoken", "testkeys", "your9secret", "sample_token9"])
def test_a_value_that_only_begins_like_an_example_is_redacted(value: str) -> None:
    out = Redactor(KEY, engine="re").redact_json(orjson.dumps({"content": f"API_KEY={value}"}))
    assert value.encode() not in out
