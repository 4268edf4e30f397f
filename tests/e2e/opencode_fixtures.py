"""The real `opencode serve` and the scripted fake LLM, one of each per test session: imported
by tests/e2e/conftest.py and tests/otel/conftest.py (a fixture imported into a conftest is that
folder's fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm import FakeLLM
from opencode_harness import HOW, OpenCode, find_or_install, opencode_server
from realparts import require

__all__ = ["fake_llm", "opencode", "opencode_binary"]


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
