"""Make the export test helpers, the archiver fakes and the e2e harness importable by name; the
real `opencode serve`, the fake LLM (the e2e fixtures) and Arize Phoenix."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent

for _p in (_HERE, _TESTS, _TESTS / "archiver", _TESTS / "e2e"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from opencode_fixtures import fake_llm, opencode, opencode_binary  # noqa: E402, F401
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
