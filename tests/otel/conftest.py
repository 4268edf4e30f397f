"""Make the export test helpers, the archiver fakes and the e2e harness importable by name."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent

for _p in (_HERE, _TESTS, _TESTS / "archiver", _TESTS / "e2e"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from fakellm import FakeLLM  # noqa: E402
from opencode_harness import HOW as OPENCODE_HOW  # noqa: E402
from opencode_harness import OpenCode, find_or_install, opencode_server  # noqa: E402
from phoenix_harness import HOW as PHOENIX_HOW  # noqa: E402
from phoenix_harness import phoenix_binary, phoenix_server  # noqa: E402
from realparts import require  # noqa: E402


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = phoenix_binary()
    require(binary is not None, "Arize Phoenix", PHOENIX_HOW)
    assert binary is not None
    with phoenix_server(binary, tmp_path_factory.mktemp("phoenix")) as url:
        yield url


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLM]:
    llm = FakeLLM().start()
    yield llm
    llm.stop()


@pytest.fixture(scope="session")
def opencode(fake_llm: FakeLLM, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenCode]:
    binary, why = find_or_install()
    require(binary is not None, f"opencode-ai ({why})", OPENCODE_HOW)
    assert binary is not None
    with opencode_server(binary, tmp_path_factory.mktemp("opencode"), fake_llm.url) as oc:
        yield oc
