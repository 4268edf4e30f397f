"""Which password a watched server gets: its own (OCTEL_OPENCODE_PASSWORDS), the one OpenCode 2's
background service registered for its URL (service.json), else OCTEL_OPENCODE_PASSWORD; a bad
setting is an error naming it, never showing a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_server import FakeOpenCode2
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner
from watch_v2 import new_store, until, watching

from archiver.credentials import parse_passwords, password_for, read_service
from cli import app
from telemetry.settings import Settings


def _service(tmp_path: Path, url: str, password: str) -> Path:
    path = tmp_path / "service.json"
    path.write_text(
        json.dumps({"id": "svc", "version": "2.1.2", "url": url, "pid": 4242, "password": password})
    )
    path.chmod(0o600)
    return path


def test_the_password_of_a_server_is_its_own_then_the_services_then_the_default(tmp_path: Path) -> None:
    svc = _service(tmp_path, "http://127.0.0.1:5000", "from-service")
    per = json.dumps({"http://127.0.0.1:4000/": "own"})
    assert password_for("http://127.0.0.1:4000", passwords=per, default="d", service_file=svc) == "own"
    assert (
        password_for("http://127.0.0.1:5000/", passwords=per, default="d", service_file=svc) == "from-service"
    )
    assert password_for("http://127.0.0.1:6000", passwords=per, default="d", service_file=svc) == "d"
    assert password_for("http://127.0.0.1:6000", service_file=tmp_path / "absent.json") is None
    assert read_service(svc) is not None and read_service(svc).pid == 4242  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["not json", '["a"]', '{"http://x": 1}', '{"ftp://x": "p"}'])
def test_a_bad_password_setting_names_the_setting_not_a_value(bad: str) -> None:
    with pytest.raises(ValueError, match="OCTEL_OPENCODE_PASSWORDS") as err:
        parse_passwords(bad)
    assert '"p"' not in str(err.value)
    with pytest.raises(ValidationError, match="OCTEL_OPENCODE_PASSWORDS"):
        Settings(opencode_passwords=SecretStr(bad), _env_file=None)  # type: ignore[call-arg]


def test_the_watcher_takes_the_password_the_service_registered(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    svc = _service(tmp_path, oc2.url, oc2.password)
    store = new_store(tmp_path / "data", opencode_service_file=svc, redact_values="")
    with watching(store, oc2.url) as st:
        until(lambda: oc2._subs, what="the watcher on /api/event (authenticated)")
        sid = oc2.session(title="via the service")
        oc2.user(sid, "go")
        until(lambda: (r := st.live(sid)) and r.state == "busy", what="busy")


def test_watch_server_service_without_a_registration_says_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "service.json"
    env = {"OCTEL_OPENCODE_SERVICE_FILE": str(missing), "OCTEL_REDACT_VALUES": "", "COLUMNS": "200"}
    res = CliRunner(env=env).invoke(
        app, ["--data-dir", str(tmp_path / "d"), "watch", "--server", "service", "--for", "1"]
    )
    assert (
        res.exit_code == 2
        and "no OpenCode 2 service registration" in res.output
        and str(missing) in res.output
    )
