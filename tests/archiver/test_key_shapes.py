"""Key shapes of cloud and package services (rules from gitleaks and detect-secrets), signed-URL
signatures, and what the rules must leave alone: a prefix inside a longer word, numbers and
ranges after a secret-looking key, prose."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from key_shapes import DOCKER_AUTH, SHAPES, SIGNED_URLS, planted
from mutation import examples

from archiver.redact import Redactor
from archiver.rules import builtin_rules

KEY = b"k" * 32
ENGINES = ["auto", "re"]
NAMES = [*SHAPES, "docker_auth"]


def _nest(text: str, depth: int) -> str:
    for _ in range(depth):
        text = json.dumps({"v": text})
    return text


def _inner(out: Any, depth: int) -> str:
    text = out["k"]
    for _ in range(depth):
        text = json.loads(text)["v"]
    return str(text)


def _key(name: str) -> str:
    return DOCKER_AUTH if name == "docker_auth" else SHAPES[name][1]


def _rule(name: str) -> str:
    return "docker_auth" if name == "docker_auth" else SHAPES[name][0]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_each_key_shape_is_redacted_by_its_rule(name: str, depth: int, engine: str) -> None:
    text = f"see {planted(name)} here"
    out, counts = Redactor(KEY, engine=engine).redact_obj({"k": _nest(text, depth)})
    inner = _inner(out, depth)
    mark = Redactor(KEY).placeholder(_rule(name), _key(name).encode()).decode()
    assert inner == f"see {planted(name).replace(_key(name), mark)} here", "the key whole, nothing else"
    assert counts == {_rule(name): 1}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_key_glued_after_a_letter_is_part_of_a_word(name: str, engine: str) -> None:
    if name == "azure_storage":  # found by its `AccountKey=`, not by its own shape
        return
    text = "x" + SHAPES[name][1]
    _, counts = Redactor(KEY, engine=engine).redact_obj(text)
    assert _rule(name) not in counts, counts


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_each_key_shape_as_a_json_field_and_at_a_line_start(name: str, engine: str) -> None:
    red = Redactor(KEY, engine=engine)
    out, _ = red.redact_obj({"a": f"out\n{planted(name)}\nmore", "b": {"value": planted(name)}})
    assert _key(name) not in json.dumps(out)


def test_a_connection_string_keeps_its_names() -> None:
    out, _ = Redactor(KEY).redact_obj(planted("azure_storage"))
    assert out.startswith("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:azure:")
    assert out.endswith("];EndpointSuffix=core.windows.net")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("url", "signature", "kept"), SIGNED_URLS)
def test_a_signed_url_loses_its_signature_and_stays_readable(
    url: str, signature: str, kept: str, engine: str
) -> None:
    out, counts = Redactor(KEY, engine=engine).redact_obj(f"fetch {url} now")
    assert signature not in out and kept in out and counts == {"signature": 1}
    assert "[REDACTED:signature:" in out and out.endswith(" now")


# --- left alone ----------------------------------------------------------------------------

LEFT_ALONE = [
    "delegated to task-force-code-review-specialist-agent",  # `sk-` inside `task-`
    "the risk-assessment-and-mitigation-planning-step",
    "DISK0123456789abcdef0123456789abcdef",  # `SK` + 32 hex inside a word
    "ASK_LIVE_0123456789",
    "chf_FAKEfakeFAKEfakeFAKEfakeFAKEfakeFA",  # `hf_` inside a word
    "xnpm_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "token_usage_estimate: 70-120K",
    "max_tokens: 8192",
    "tokens: 1,234,567",
    "token_budget = ~2.5M",
    "secret_rotation_days: 30-90",
    "password_min_length: 12..64",
    "api_key_count = 3/10",
    "token: estimated from the usage of the last run",
    "https://example.com/search?q=signature&page=2",
    "sigma=0.5 and Signature verification passed",
    '{"author": "Jane Doe", "authentication": "oauth"}',
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("text", LEFT_ALONE)
def test_look_alikes_are_left_alone(text: str, engine: str) -> None:
    assert Redactor(KEY, engine=engine).redact_obj({"k": text}) == ({"k": text}, {})


def _token_anchors() -> list[str]:
    """The literal starts of the rules that find a token by its own shape."""
    context = {
        "url_userinfo",
        "bearer",
        "assignment",
        "flag",
        "command",
        "forgejo",
        "signature",
        "docker_auth",
        "key_block",
        "azure",
        "slack",
    }
    return sorted({a.decode() for r in builtin_rules() if r.name not in context for a in r.anchors})


_letters = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), min_size=1, max_size=6
)
_body = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    min_size=41,
    max_size=70,
)


@settings(max_examples=examples(400))
@given(_letters, st.sampled_from(_token_anchors()), _body, st.sampled_from(ENGINES))
def test_no_token_rule_fires_inside_a_longer_word(before: str, anchor: str, body: str, engine: str) -> None:
    text = f"the {before}{anchor}{body} word"
    assert Redactor(KEY, engine=engine).redact_obj(text) == (text, {})


_unit = st.sampled_from(["", "K", "k", "M", "%", "ms", "s", "x", "GB"])
_num = st.builds(
    lambda n, frac, unit: f"{n:,}{frac}{unit}" if n % 2 else f"{n}{frac}{unit}",
    st.integers(0, 10**12),
    st.sampled_from(["", ".5", ".25"]),
    _unit,
)
_range = _num | st.builds(
    lambda a, sep, b: f"{a}{sep}{b}", _num, st.sampled_from(["-", "\u2013", "..", "~", "/"]), _num
)


@settings(max_examples=examples(400))
@given(
    st.sampled_from(
        [
            "token_usage_estimate",
            "max_tokens",
            "secret_count",
            "password_length",
            "api_key_quota",
            "TOKEN_LIMIT",
            "credential_ttl",
            "auth_retries",
            "tokens",
        ]
    ),
    st.sampled_from([": ", "=", " = ", ":"]),
    st.sampled_from(["", "'", '"']),
    _range,
    st.integers(0, 2),
)
def test_numbers_and_ranges_are_never_redacted(
    key: str, sep: str, quote: str, value: str, depth: int
) -> None:
    text = _nest(f"{key}{sep}{quote}{value}{quote}\nnext", depth)
    out, counts = Redactor(KEY).redact_obj({"k": text})
    assert out == {"k": text} and counts == {}, (text, out)


def test_a_key_glued_after_digits_or_at_a_line_start_is_still_taken() -> None:
    token = SHAPES["npm"][1]
    out, _ = Redactor(KEY).redact_obj([f"id42{token}", f"line\n{token}", f"({token})", f"key={token}"])
    assert not any(token in o for o in out)


def _every_start() -> list[tuple[str, str]]:
    """Each shape's key written with each literal start its service uses (`sk_live_`, `rk_test_`, …)."""
    from archiver.vendor_rules import _SHAPES

    out = []
    for rule, key in sorted(SHAPES.values()):
        for r, anchors, _ in _SHAPES:
            own = next((a.decode() for a in anchors if key.startswith(a.decode())), None)
            # flyio, grafana and sentry starts take bodies of other shapes: no swap for them
            if r == rule and own is not None and rule not in ("flyio", "grafana", "sentry"):
                out += [(rule, a.decode() + key[len(own) :]) for a in anchors if a.decode() != own]
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("rule", "key"), _every_start())
def test_every_literal_start_of_a_shape_is_found(rule: str, key: str, engine: str) -> None:
    out, counts = Redactor(KEY, engine=engine).redact_obj(f"see {key} here")
    assert key not in out and rule in counts, (key, out)
