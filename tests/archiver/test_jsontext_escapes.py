"""The decoded view finds the escapes of its pattern's own search, in far fewer steps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.jsontext import _ESCAPE, _escapes, decoded_view

# backslash runs, the two escape letters, hex digits (a surrogate's too) and other bytes
_PIECES = [b"\\", b"\\\\", b"u", b"/", b"n", b"0", b"7", b"a", b"F", b"d8", b"dc", b"D83D", b"DE00"]
_PIECES += [b"x", b'"']


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join))
def test_escapes_are_the_patterns_matches(text: bytes) -> None:
    assert [m.span() for m in _escapes(text)] == [m.span() for m in _ESCAPE.finditer(text)]
    assert [m.groups() for m in _escapes(text)] == [m.groups() for m in _ESCAPE.finditer(text)]


def test_a_text_of_newlines_and_one_escape_decodes_that_escape() -> None:
    text = b'"' + b"line\\n" * 1000 + b'\\u0067hp_ \\\\u0041 \\/ \\ud83d\\ude00 \\u001b"'
    view = decoded_view(text)
    # a nested escape decodes whole; a control character stays escaped
    assert view.text.endswith(b'ghp_ A / \xf0\x9f\x98\x80 \\u001b"')
