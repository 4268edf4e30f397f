"""An add-on detector installed as a package (the `octel.detectors` entry-point group) is found
by `octel detect`, its thresholds by `-t`, and a broken one is named and skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "opencode" / "healthy.json"

_DETECTOR = '''
"""Stuck once a session has `pkg_turns_stuck` assistant turns."""
from detectors import Detector, Finding, register
from detectors.thresholds import Threshold


@register(
    "pkg_turn_counter",
    "too many assistant turns (an installed add-on)",
    stop_reason="too_many_turns",
    thresholds={"pkg_turns_stuck": Threshold(1, "assistant turns before stuck")},
)
class TurnCounter(Detector):
    name = "pkg_turn_counter"

    def __init__(self, thresholds):
        super().__init__(thresholds)
        self.turns = 0

    def feed(self, turn):
        self.turns += turn.role == "assistant"

    def finding(self):
        stuck = self.turns >= self.th.get("pkg_turns_stuck")
        verdict, score = ("stuck", 1.0) if stuck else ("healthy", 0.0)
        return Finding(self.name, verdict, score, {"turns": self.turns})
'''


def _install(tmp_path: Path, entry_points: dict[str, str], modules: dict[str, str]) -> Path:
    """Build a wheel of a one-module package and pip-install it into a folder of its own, as a
    user installs an add-on (the wheel is written by hand: no build backend needed offline)."""
    files = {"octel_turns/__init__.py": ""}
    files |= {f"octel_turns/{name}.py": textwrap.dedent(body) for name, body in modules.items()}
    info = "octel_turns-0.1.0.dist-info"
    files[f"{info}/METADATA"] = "Metadata-Version: 2.1\nName: octel-turns\nVersion: 0.1.0\n"
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    eps = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    files[f"{info}/entry_points.txt"] = "[octel.detectors]\n" + eps
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    wheel = tmp_path / "octel_turns-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, body in files.items():
            z.writestr(name, body)
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    done = subprocess.run(
        [*pip, "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return target


def _detect(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "cli", "detect", str(FIXTURE), "--json", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_installed_addon_is_run_by_detect_with_its_thresholds(tmp_path: Path) -> None:
    site = _install(tmp_path, {"pkg_turn_counter": "octel_turns.detector"}, {"detector": _DETECTOR})

    found = _detect(site)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["verdict"] == "stuck"
    assert [f["detector"] for f in answer["findings"]] == ["pkg_turn_counter"]

    # its own threshold is accepted before any detector ran, and changes the verdict
    raised = _detect(site, "-t", "pkg_turns_stuck=1000")
    assert raised.returncode == 0, raised.stderr
    assert json.loads(raised.stdout)["verdict"] == "healthy"

    # without the package, the same threshold is unknown: the name came from the add-on
    plain = _detect(tmp_path / "nothing", "-t", "pkg_turns_stuck=1000")
    assert plain.returncode != 0 and "pkg_turns_stuck" in plain.stdout + plain.stderr


def test_a_broken_addon_is_named_and_the_rest_still_runs(tmp_path: Path) -> None:
    site = _install(
        tmp_path,
        {"broken": "octel_turns.broken", "pkg_turn_counter": "octel_turns.detector"},
        {"detector": _DETECTOR, "broken": "raise RuntimeError('cannot start')\n"},
    )
    found = _detect(site)
    assert found.returncode == 0, found.stderr
    assert [f["detector"] for f in json.loads(found.stdout)["findings"]] == ["pkg_turn_counter"]
    assert "broken" in found.stderr and "cannot start" in found.stderr


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    site = _install(tmp_path, {"pkg_turn_counter": "octel_turns.detector"}, {"detector": _DETECTOR})
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_registry_loads_addons_once_on_first_read(fresh_registry: Path) -> None:
    from detectors import REGISTRY
    from detectors.base import Registry

    reg = Registry(group="octel.detectors")
    # the add-on registers itself in the default registry, as built-ins do; a private registry
    # that loads the group imports it, and is itself never touched
    try:
        assert reg.names() == ()
        assert "pkg_turn_counter" in REGISTRY.names()
        assert REGISTRY.spec("pkg_turn_counter") is not None
    finally:
        REGISTRY.unregister("pkg_turn_counter")
        sys.modules.pop("octel_turns.detector", None)
        sys.modules.pop("octel_turns", None)
