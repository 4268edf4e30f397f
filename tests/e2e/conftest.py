"""Fixtures for end-to-end tests against a real `opencode serve` and the scripted fake LLM."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
_TESTS = _HERE.parent


for _p in (_HERE, _TESTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from fakellm import FakeLLM  # noqa: E402
from opencode_harness import HOW, OpenCode, find_or_install, opencode_server  # noqa: E402
from realparts import require  # noqa: E402


@pytest.fixture(scope="session")
def opencode_binary() -> Path:
    binary, why = find_or_install()
    require(binary is not None, f"opencode-ai ({why})", HOW)
    assert binary is not None
    return binary


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLM]:
    llm = FakeLLM().start()
    yield llm
    llm.stop()


@pytest.fixture(scope="session")
def opencode(
    opencode_binary: Path, fake_llm: FakeLLM, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OpenCode]:
    with opencode_server(opencode_binary, tmp_path_factory.mktemp("opencode"), fake_llm.url) as oc:
        yield oc
