"""ccusage (npm ``ccusage``, offline) as the second opinion on tokens and cost, over the captured
transcripts of the real Claude Code CLI 2.1.328 (tests/fixtures/claude) and the field-shaped
transcripts of tests/corpus/claude_field.

Each folder is imported by ``octel import claude`` and read by ``ccusage session --json
--offline --breakdown``. ccusage groups a session by the folder its transcript lies in: the
project folder holds the main sessions, ``subagents/`` and ``wf_…/`` their agents. So per folder:
ccusage's project row equals octel's main sessions' own tokens, its other rows octel's subagents,
its totals octel's whole trees, kind by kind. The cost is genai-prices' price of those tokens
(octel prices each answer; the models here have one price per token kind). ccusage's own offline
table lacks ``claude-opus-5-5``, the CLI's default here, so its cost is compared on a copy whose
answers name ``claude-sonnet-4-5-20250929``, a model both tables list.

Where ccusage does not read the files right, the test says so in ``NOT_READ_RIGHT`` and checks
that it still does not, so the exception goes once ccusage reads them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from claude_import_rows import import_claude
from claude_lines import FIXTURES
from realparts import require

from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.ccusage

VERSION = "18.0.11"  # the last release in plain JavaScript: later ones need Node 22 or a native build
NPM_DIR = Path(os.environ.get("OCTEL_CCUSAGE_NPM_DIR") or Path.home() / ".cache" / "octel-test" / "ccusage")
HOW = (
    f"install it with `npm install --no-audit --no-fund --prefix {NPM_DIR} ccusage@{VERSION}` "
    "(.ci/run does), or set OCTEL_CCUSAGE_NPM_DIR to the folder holding node_modules/.bin/ccusage"
)
CORPUS = FIXTURES.parents[1] / "corpus"
PRICED_BY_BOTH = "claude-sonnet-4-5-20250929"
KINDS = {
    "input": "inputTokens",
    "output": "outputTokens",
    "cache_read": "cacheReadTokens",
    "cache_write": "cacheCreationTokens",
}

# Folders whose usage ccusage does not read right, and why.
NOT_READ_RIGHT = {
    # stream-json captures (`claude -p --output-format stream-json`), not transcripts: the CLI
    # writes one line per content block of an answer, each with the answer's usage and no
    # requestId; ccusage counts each line, octel each answer once (its final line)
    "corpus/claude/dev": "stream-json: one line per content block, counted by ccusage each",
    "corpus/claude/heldout": "stream-json: one line per content block, counted by ccusage each",
}


def _ccusage() -> Path:
    binary = NPM_DIR / "node_modules" / ".bin" / "ccusage"
    ok = binary.is_file() and shutil.which("node") is not None
    if ok:
        got = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
        ok = got.stdout.strip() == VERSION
    require(ok, f"ccusage {VERSION} (npm) with node", HOW)
    return binary


def _folders() -> dict[str, Path]:
    """Each captured config folder (one that holds ``projects/``), by a short name."""
    out = {str(p.parent.relative_to(FIXTURES)): p.parent for p in sorted(FIXTURES.rglob("projects"))}
    out["corpus/claude_field"] = CORPUS / "claude_field"
    out.update({k: CORPUS / k.removeprefix("corpus/") for k in NOT_READ_RIGHT})
    return out


def _config(src: Path, dest: Path, model: str | None = None) -> Path:
    """A config folder of ``src`` (a flat folder of transcripts becomes one project), its
    answers' model renamed to ``model`` when given."""
    if (src / "projects").is_dir():
        shutil.copytree(src, dest)
    else:
        project = dest / "projects" / "-home-dev-corpus"
        project.mkdir(parents=True)
        for f in src.glob("*.jsonl"):
            shutil.copy(f, project / f.name)
    if model:
        for f in dest.rglob("*.jsonl"):
            f.write_text(f.read_text().replace('"model":"claude-opus-5-5"', f'"model":"{model}"'))
    return dest


def _octel(cfg: Path, data: Path) -> list[SessionIndex]:
    return import_claude(cfg, data)[1]


def _read(binary: Path, cfg: Path, home: Path) -> list[dict[str, Any]]:
    home.mkdir()
    # an empty HOME: ccusage reads no folder but this one (and no other agent's data)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CLAUDE_CONFIG_DIR": str(cfg), "TZ": "UTC"}
    got = subprocess.run(
        [str(binary), "session", "--json", "--offline", "--breakdown"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    return list(out.get("sessions") or []) if isinstance(out, dict) else []  # `[]`: no usage at all


def _tokens(rows: list[SessionIndex]) -> dict[str, int]:
    return {k: sum(getattr(r, f"tokens_{k}") for r in rows) for k in KINDS}


def _theirs(sessions: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(int(s.get(v) or 0) for s in sessions) for k, v in KINDS.items()}


def _genai_price(sessions: list[dict[str, Any]]) -> float:
    """genai-prices' price of ccusage's tokens, model by model, on the day of each session."""
    from genai_prices import Usage, calc_price

    total = 0.0
    for s in sessions:
        day = datetime.fromisoformat(str(s["lastActivity"])).replace(tzinfo=UTC)
        for m in s["modelBreakdowns"]:
            if m["modelName"] == "<synthetic>":
                continue
            read, write = int(m["cacheReadTokens"]), int(m["cacheCreationTokens"])
            usage = Usage(
                input_tokens=int(m["inputTokens"]) + read + write,  # genai-prices counts the cache inside
                output_tokens=int(m["outputTokens"]),
                cache_read_tokens=read,
                cache_write_tokens=write,
            )
            got = calc_price(usage, m["modelName"], provider_id="anthropic", genai_request_timestamp=day)
            total += float(got.total_price)
    return total


@pytest.mark.parametrize("name", sorted(_folders()))
def test_tokens_and_cost_equal_ccusage_and_genai_prices(name: str, tmp_path: Path) -> None:
    binary = _ccusage()
    cfg = _config(_folders()[name], tmp_path / "cfg")
    rows = _octel(cfg, tmp_path / "data")
    sessions = _read(binary, cfg, tmp_path / "home")
    if name in NOT_READ_RIGHT:
        # still so: ccusage counts more than each answer once
        assert _theirs(sessions)["output"] > _tokens(rows)["output"] > 0, NOT_READ_RIGHT[name]
        return
    assert _theirs(sessions) == _tokens(rows)
    (project,) = {p.name for p in (cfg / "projects").iterdir()}
    main = [s for s in sessions if s["sessionId"] == project]
    # a 1.0.x subagent's lines lie in its main session's file (`isSidechain`): ccusage counts them
    # with the main session, octel as the subagent it was
    inline = [r for r in rows if ".sidechain-" in r.session_id]
    assert _theirs(main) == _tokens([r for r in rows if r.depth == 0 or r in inline])
    assert _theirs([s for s in sessions if s not in main]) == _tokens(
        [r for r in rows if r.depth > 0 and r not in inline]
    )
    # every model is priced, or named unpriced: here genai-prices lists them all
    assert all(r.unpriced_models is None for r in rows)
    assert sum(r.cost_usd for r in rows) == pytest.approx(_genai_price(sessions), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", sorted(set(_folders()) - set(NOT_READ_RIGHT)))
def test_cost_equals_ccusages_on_a_model_both_price(name: str, tmp_path: Path) -> None:
    binary = _ccusage()
    cfg = _config(_folders()[name], tmp_path / "cfg", model=PRICED_BY_BOTH)
    rows = _octel(cfg, tmp_path / "data")
    sessions = _read(binary, cfg, tmp_path / "home")
    assert _theirs(sessions) == _tokens(rows)
    models = {m["modelName"] for s in sessions for m in s["modelBreakdowns"]} - {"<synthetic>"}
    assert models <= {PRICED_BY_BOTH}
    ours = sum(r.cost_usd for r in rows)
    theirs = sum(float(s["totalCost"]) for s in sessions)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9)
    assert ours == pytest.approx(_genai_price(sessions), rel=1e-9, abs=1e-12)
    assert (ours > 0) == any(r.tokens_input for r in rows)
