"""The documents held for the search catch-up: taken only under the name and hash they were
written with (a document written again elsewhere is read from the store), each once, and no
more than `MAX_BYTES` of them held, the oldest let go first."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from archiver import just_written


@pytest.fixture(autouse=True)
def empty() -> Iterator[None]:
    with (
        mock.patch.object(just_written, "_held", type(just_written._held)()),
        mock.patch.object(just_written, "_size", 0),
    ):
        yield


def test_taken_once_under_its_name_and_hash() -> None:
    just_written.keep("a.json", "sha256:1", {"n": 1}, 10)
    assert just_written.take("a.json", "sha256:2") is None  # another hash: the store's copy
    assert just_written.take("b.json", "sha256:1") is None
    assert just_written.take("a.json", "sha256:1") == {"n": 1}
    assert just_written.take("a.json", "sha256:1") is None


def test_written_again_the_newer_is_held() -> None:
    just_written.keep("a.json", "sha256:1", {"n": 1}, 10)
    just_written.keep("a.json", "sha256:2", {"n": 2}, 10)
    assert just_written.take("a.json", "sha256:1") is None
    assert just_written.take("a.json", "sha256:2") == {"n": 2}


def test_no_more_than_the_bound_is_held_oldest_let_go() -> None:
    with mock.patch.object(just_written, "MAX_BYTES", 25):
        for i in range(3):
            just_written.keep(f"{i}.json", "h", {"n": i}, 10)
        just_written.keep("big.json", "h", {"n": 9}, 26)  # larger than the bound: not held
        assert just_written.take("0.json", "h") is None
        assert [just_written.take(f"{i}.json", "h") for i in (1, 2)] == [{"n": 1}, {"n": 2}]
        assert just_written.take("big.json", "h") is None
        assert just_written._size == 0
