"""Redact, then cut: no head of a secret and no piece of a placeholder is left by a cut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from mutation import examples

from archiver.cut import PLACEHOLDER, cut
from archiver.redact import Redactor

KEY = b"k" * 32
# secrets that hold no space, each in the context its rule needs
SECRETS = [
    ("postgres://admin:", "hunter2hunter2-fake", "@db.internal:5432/app"),
    ("", "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234", ""),
    ("", "sk_live_FAKE0123456789abcdefFAKE0123", ""),
    ("password=", "correct-horse-battery-staple", ""),
]
_words = st.text(st.sampled_from("abcdefgh .,"), max_size=60)
_any = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


def _pieces(secret: str, n: int = 8) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


@settings(max_examples=examples(300))
@given(
    st.lists(_any | st.sampled_from(["[REDACTED:github:0123456789ab]", " "]), max_size=6), st.integers(0, 120)
)
def test_a_cut_is_a_bounded_head_that_splits_no_placeholder(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    for ellipsis in ("", "…"):
        out = cut(text, limit, ellipsis)
        if len(text) <= limit:
            assert out == text
            continue
        assert len(out) <= limit and out.endswith(ellipsis if len(ellipsis) <= limit else "")
        head = out.removesuffix(ellipsis) if len(ellipsis) <= limit else out
        assert text.startswith(head)
        # every placeholder the text has at the cut is whole or gone
        for m in PLACEHOLDER.finditer(text):
            assert m.end() <= len(head) or m.start() >= len(head)


@settings(max_examples=examples(300))
@given(_words, st.sampled_from(SECRETS), _words, st.integers(1, 200), st.sampled_from(["", "…"]))
def test_redact_then_cut_leaves_no_piece_of_a_secret_across_the_cut(
    before: str, planted: tuple[str, str, str], after: str, limit: int, ellipsis: str
) -> None:
    pre, secret, post = planted
    text = f"{before} {pre}{secret}{post} {after}"
    out = Redactor(KEY).cut(text, limit, ellipsis)
    assert len(out) <= max(limit, len(ellipsis)) or len(text) <= limit
    assert not any(p in out for p in _pieces(secret)), out
    assert "[REDACTED:" not in out or PLACEHOLDER.search(out)


@settings(max_examples=examples(300))
@given(_words, st.sampled_from(SECRETS), _words, st.integers(1, 200))
def test_a_cut_of_text_not_yet_redacted_keeps_no_head_of_the_word_it_splits(
    before: str, planted: tuple[str, str, str], after: str, limit: int
) -> None:
    pre, secret, post = planted
    text = f"{before} {pre}{secret}{post} {after}"
    out = cut(text, limit, "…")
    whole = Redactor(KEY).redact_str(out)
    assert not any(p in whole for p in _pieces(secret)) or secret in text[: len(out)], out


def test_the_counts_of_what_a_cut_redacted_are_kept() -> None:
    from collections import Counter

    counts: Counter[str] = Counter()
    out = Redactor(KEY).cut("x" * 190 + " postgres://u:pw-secret-123@db.example/x", 200, "…", counts)
    assert out == "x" * 190 + "…" and counts == {"url_userinfo": 1}
