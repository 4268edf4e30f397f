"""`octel doctor` names the OpenCode generation it finds and says whether auth works."""

from __future__ import annotations

from pathlib import Path

import httpx
from fake_server import FakeOpenCode2

from telemetry.doctor import Check, run_checks
from telemetry.settings import Settings
from telemetry.store.db import make_engine


def _check(tmp_path: Path, url: str, password: str) -> Check:
    s = Settings(data_dir=tmp_path, opencode_url=url, opencode_password=password, _env_file=None)  # type: ignore[call-arg]
    with httpx.Client() as client:
        return {c.name: c for c in run_checks(s, make_engine, client)}["opencode server"]


def test_doctor_names_opencode_2_and_auth(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    ok = _check(tmp_path, oc2.url, oc2.password)
    assert ok.status == "ok" and "version 2.1.2 (OpenCode generation 2, auth ok)" in ok.detail
    bad = _check(tmp_path, oc2.url, "wrong-password-0")
    assert bad.status == "fail" and "authentication failed (HTTP 401)" in bad.detail
    assert "OCTEL_OPENCODE_PASSWORD" in bad.fix and "wrong-password-0" not in bad.detail + bad.fix
