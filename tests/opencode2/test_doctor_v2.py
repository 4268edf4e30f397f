"""`octel doctor` names the OpenCode generation it finds and says whether auth works, for the
configured server and each other one a watcher follows or a password is given for."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from fake_server import FakeOpenCode2, serve
from pydantic import SecretStr
from watch_v2 import new_store

from telemetry.doctor import Check, run_checks
from telemetry.settings import Settings
from telemetry.store.action_models import WatchLease
from telemetry.store.db import make_engine, session_scope
from telemetry.timeutil import utcnow


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


def test_doctor_checks_auth_of_each_followed_server(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    # a second 2.x server a watcher follows (its lease in the store) and a third given a wrong
    # password of its own: each gets its own line, with the password the watcher would send it
    with serve() as other, serve() as third:
        store = new_store(
            tmp_path / "data",
            opencode_url=oc2.url,
            opencode_password=SecretStr(oc2.password),
            opencode_passwords=SecretStr(json.dumps({other.url: other.password, third.url: "not-it-0"})),
        )
        now = utcnow()
        with session_scope(store.engine) as db:
            db.add(WatchLease(server=other.url, holder="w1", acquired_at=now, renewed_at=now, expires_at=now))
        with httpx.Client() as client:
            checks = run_checks(store.settings, make_engine, client)
    main = [c for c in checks if c.name == "opencode server"]
    followed = {c.detail.split(" ")[0].rstrip(":"): c for c in checks if c.name == "followed server"}
    assert [c.status for c in main] == ["ok"] and "generation 2, auth ok" in main[0].detail
    assert set(followed) == {other.url, third.url}
    assert followed[other.url].status == "ok" and "auth ok" in followed[other.url].detail
    bad = followed[third.url]
    assert bad.status == "fail" and "authentication failed (HTTP 401)" in bad.detail
    assert "OCTEL_OPENCODE_PASSWORDS" in bad.fix and "not-it-0" not in bad.detail + bad.fix
