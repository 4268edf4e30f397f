"""A key that names where a secret comes from or what kind it is holds no secret: Claude Code's
stream-json `"apiKeySource": "ANTHROPIC_API_KEY"` (every captured run's init line) was redacted as
an assignment; the same key words naming the secret itself still are."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.redact import Redactor

KEY = b"k" * 32
ENGINES = ["auto", "re"]
WORDS = ["apiKey", "api_key", "token", "secret", "password", "access_key", "credential"]
NAMING = ["Source", "_source", "Helper", "_type", "Name", "_env", "_file", "Path"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_init_line_of_a_stream_json_run_keeps_its_api_key_source(engine: str) -> None:
    line = {
        "type": "system",
        "subtype": "init",
        "apiKeySource": "ANTHROPIC_API_KEY",
        "model": "claude-opus-5-5",
    }
    out, counts = Redactor(KEY, engine=engine).redact_obj(line)
    assert out == line and not counts
    text = orjson.dumps({"content": orjson.dumps(line).decode()})  # as JSON text inside a string
    assert Redactor(KEY, engine=engine).redact_json(text) == text


_value = st.text(
    st.sampled_from("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789_"), min_size=12, max_size=30
).map(lambda v: "Zq8" + v + "x7K")  # key-shaped: neither a number, a word nor a metavar


@given(
    st.sampled_from(WORDS),
    st.sampled_from(NAMING),
    _value,
    st.sampled_from(['"{k}": "{v}"', "{k}={v}", "{k}: {v}"]),
)
def test_a_key_naming_a_secrets_source_or_kind_is_left_the_secret_is_not(
    word: str, naming: str, value: str, shape: str
) -> None:
    r = Redactor(KEY, engine="re")
    named = shape.format(k=word + naming, v=value).encode()
    assert r.redact_json(named) == named  # values under 40 characters: no bare AWS secret either
    secret = shape.format(k=word, v=value).encode()
    assert b"[REDACTED:assignment:" in r.redact_json(secret)
