"""Transcripts Claude Code users published in public repositories (tests/corpus/claude_published,
SOURCES.md there names each), in a tuning set and a held-out set, imported as a user would
(``octel import claude DIR``) and checked against what is computed here from the raw lines:

- every file is archived as a session, none read as empty;
- each session's tokens are the sum of its answers' final usage (the last line of each message
  id), kind by kind;
- its cost is genai-prices' price of those answers, or the model is named unpriced;
- every ``[REDACTED…]`` in the archives stands for a secret (the list below says which ones and
  why), and those secrets are no longer in clear;
- ccusage (offline) counts the same tokens, where it is installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import warnings
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from claude_import_rows import import_claude
from claude_lines import FIXTURES
from test_ccusage import KINDS as CCUSAGE_KINDS
from test_ccusage import _ccusage

from archiver.redact import Redactor, load_key

CORPUS = FIXTURES.parents[1] / "corpus" / "claude_published"
SETS = ("tuning", "heldout")
KINDS = ("input", "output", "cache_read", "cache_write")

# What the redactor may replace in these transcripts, and why each is a secret. Anything else it
# replaces is a word redacted that is no secret.
SECRETS = {
    "jwt": (
        re.compile(rb"eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"),
        "a personal access token pasted in a prompt (a JWT; the copy holds a made-up one)",
    ),
    "assignment": (
        re.compile(rb"0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"),
        "the api-key of an RPC provider's URL (`?api-key=…`; the copy holds a made-up one)",
    ),
}
# Transcripts whose usage ccusage does not read right, and why.
NOT_READ_RIGHT = {
    # CLI 2.1.81 writes one line per content block of an answer, all with the answer's message
    # id and request id, only the last with its full output tokens; ccusage keeps the first
    "-published-uzaxirr-raze": "ccusage keeps an answer's first line, whose output tokens are partial",
    # 1.0.128 too: two lines an answer, the first with 1 to 4 output tokens
    "-published-sanand0-scripts": "ccusage keeps an answer's first line, whose output tokens are partial",
}


def _files(name: str) -> list[Path]:
    return sorted((CORPUS / name / "projects").glob("*/*.jsonl"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(s) for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]


def _answers(path: Path) -> dict[str, dict[str, Any]]:
    """Each answer's final line (the last line of its message id), by message id."""
    out: dict[str, dict[str, Any]] = {}
    for obj in _lines(path):
        msg = obj.get("message")
        if obj.get("type") == "assistant" and isinstance(msg, dict) and msg.get("id"):
            out.pop(msg["id"], None)
            out[msg["id"]] = obj
    return out


def _usage(obj: dict[str, Any]) -> dict[str, int]:
    u = obj["message"].get("usage") or {}
    return {
        "input": int(u.get("input_tokens") or 0),
        "output": int(u.get("output_tokens") or 0),
        "cache_read": int(u.get("cache_read_input_tokens") or 0),
        "cache_write": int(u.get("cache_creation_input_tokens") or 0),
    }


def _price(obj: dict[str, Any]) -> float | None:
    """genai-prices' price of one answer's final usage; None for a model it does not know."""
    from genai_prices import Usage, calc_price

    u, raw = _usage(obj), obj["message"].get("usage") or {}
    hour = int((raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0)
    usage = Usage(
        input_tokens=u["input"] + u["cache_read"] + u["cache_write"],  # genai-prices counts the cache inside
        output_tokens=u["output"],
        cache_read_tokens=u["cache_read"],
        cache_write_tokens=u["cache_write"],
        cache_write_5m_tokens=u["cache_write"] - hour,
        cache_write_1h_tokens=hour,
    )
    when = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = calc_price(
                usage, obj["message"]["model"], provider_id="anthropic", genai_request_timestamp=when
            )
    except LookupError:
        return None
    return float(got.total_price)


class Imported:
    def __init__(self, name: str, data: Path) -> None:
        self.report, rows = import_claude(CORPUS / name, data)
        self.data = data
        self.rows = {row.session_id: row for row in rows}


@pytest.fixture(scope="module", params=SETS)
def imported(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Imported]:
    name = str(request.param)
    return name, Imported(name, tmp_path_factory.mktemp(name))


def test_the_corpus_is_there() -> None:
    assert all(len(_files(name)) >= 5 for name in SETS)
    assert sum(f.stat().st_size for name in SETS for f in _files(name)) < 2_000_000


def test_every_file_is_archived_as_a_session(imported: tuple[str, Imported]) -> None:
    name, got = imported
    files = _files(name)
    assert got.report["sessions"] == got.report["archived"] == len(files)
    assert got.report["empty"] == 0 and got.report["problems"] == []
    assert {f.stem for f in files} <= set(got.rows)
    assert all(got.rows[f.stem].depth == 0 for f in files)


def test_tokens_are_the_answers_final_usage(imported: tuple[str, Imported]) -> None:
    name, got = imported
    for f in _files(name):
        want = dict.fromkeys(KINDS, 0)
        for obj in _answers(f).values():
            for k, v in _usage(obj).items():
                want[k] += v
        row = got.rows[f.stem]
        assert {k: getattr(row, f"tokens_{k}") for k in KINDS} == want, f.parent.name


def test_cost_is_genai_prices_or_the_model_is_named_unpriced(imported: tuple[str, Imported]) -> None:
    name, got = imported
    for f in _files(name):
        cost, unpriced = 0.0, set()
        for obj in _answers(f).values():
            price = _price(obj)
            if price is None:
                if any(_usage(obj).values()):
                    unpriced.add(obj["message"]["model"])
            else:
                cost += price
        row = got.rows[f.stem]
        assert set(filter(None, (row.unpriced_models or "").split(","))) == unpriced, f.parent.name
        assert row.cost_usd == pytest.approx(cost, rel=1e-9, abs=1e-12), f.parent.name


class _Seen(Redactor):
    """The archive's redactor (same key), noting the secret behind each placeholder it makes."""

    def __init__(self, key: bytes) -> None:
        super().__init__(key)
        self.seen: dict[bytes, tuple[str, bytes]] = {}

    def placeholder(self, rule: str, secret: bytes) -> bytes:
        mark = super().placeholder(rule, secret)
        self.seen[mark] = (rule, secret)
        return mark


def test_every_redaction_is_a_secret(imported: tuple[str, Imported]) -> None:
    name, got = imported
    redactor = _Seen(load_key(got.data / "redact.key"))
    for f in _files(name):
        redactor.redact_json(f.read_bytes())
    archives = b"".join(p.read_bytes() for p in sorted((got.data / "archives").iterdir()))
    marks = set(re.findall(rb"\[REDACTED:[a-z_]+:[0-9a-f]{12}\]", archives))
    assert marks <= set(redactor.seen)  # each one stands for a find in the transcripts
    wrong = defaultdict(set)
    for mark in marks:
        rule, secret = redactor.seen[mark]
        shape = SECRETS.get(rule)
        if shape is None or not shape[0].fullmatch(secret):
            wrong[rule].add(secret)
    assert not wrong, dict(wrong)
    # and those secrets are not left in clear
    for shape, _ in SECRETS.values():
        assert not shape.search(archives)


def test_tokens_equal_ccusages(imported: tuple[str, Imported], tmp_path: Path) -> None:
    name, got = imported
    binary = _ccusage()
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(CORPUS / name),
        "TZ": "UTC",
    }
    out = subprocess.run(
        [str(binary), "session", "--json", "--offline"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    theirs = {s["sessionId"]: s for s in json.loads(out.stdout)["sessions"]}
    # ccusage names a session by its project folder (one transcript in each here) and leaves out
    # one without usage (only the CLI's own `<synthetic>` answers)
    for f in _files(name):
        session = theirs.get(f.parent.name, {})
        row = got.rows[f.stem]
        theirs_ = {k: int(session.get(v) or 0) for k, v in CCUSAGE_KINDS.items()}
        ours = {k: getattr(row, f"tokens_{k}") for k in KINDS}
        if f.parent.name in NOT_READ_RIGHT:
            # still so: ccusage counts fewer output tokens than the answers' final lines say
            assert 0 < theirs_["output"] < ours["output"], NOT_READ_RIGHT[f.parent.name]
            continue
        assert theirs_ == ours, f.parent.name


def test_no_published_session_is_called_stuck(imported: tuple[str, Imported]) -> None:
    """Each of these sessions ended with its work done (read by a person): none is stuck."""
    name, got = imported
    stuck = {
        f.stem: got.rows[f.stem].worst_detector for f in _files(name) if got.rows[f.stem].verdict == "stuck"
    }
    assert stuck == {}
