"""`octel doctor`: each check passes or fails for the right reason, with a fix and exit code 1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from octelrun import Octel
from realparts import free_port, require
from typer.testing import CliRunner

from telemetry.doctor import run_checks
from telemetry.settings import Settings
from telemetry.store.db import make_engine

sys.path.insert(0, str(Path(__file__).parent.parent / "e2e"))  # the real opencode harness


def _checks(octel: Octel) -> tuple[int, dict[str, dict[str, Any]]]:
    r = octel("doctor", "--json")
    got = json.loads(r.stdout)
    assert got["ok"] is (r.exit_code == 0)
    return r.exit_code, {c["name"]: c for c in got["checks"]}


@pytest.fixture
def closed_opencode(monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("OCTEL_OPENCODE_URL", url)
    monkeypatch.delenv("OCTEL_INGEST_TOKEN", raising=False)
    return url


def test_a_new_folder_needs_the_store_created(tmp_path: Path, closed_opencode: str) -> None:
    url = f"sqlite:///{tmp_path / 'data' / 'octel.db'}"
    octel = Octel(tmp_path / "data", url, make_engine("sqlite://"), CliRunner(env={"COLUMNS": "200"}))
    code, checks = _checks(octel)
    assert code == 1
    assert checks["database"]["status"] == "fail" and "octel db upgrade" in checks["database"]["fix"]
    assert not (tmp_path / "data").exists()  # doctor looks, it does not create
    table = octel("doctor")
    assert table.exit_code == 1 and "fix:" in table.stdout and "check(s) failed" in table.stdout


def test_everything_but_opencode_is_fine(octel: Octel, closed_opencode: str) -> None:
    (octel.data_dir / "archives").mkdir(parents=True)
    token = octel.data_dir / "ingest-token"
    token.write_text("x" * 40)
    token.chmod(0o600)
    code, checks = _checks(octel)
    assert code == 1
    statuses = {name: c["status"] for name, c in checks.items()}
    assert statuses == {
        "settings": "ok",
        "database": "ok",
        "schema": "ok",
        "archive index": "ok",
        "lost trees": "ok",
        "spend summary": "ok",
        "archive folder": "ok",
        "opencode server": "fail",
        "ingest token": "ok",
    }
    assert closed_opencode in checks["opencode server"]["detail"]
    assert "OCTEL_OPENCODE_URL" in checks["opencode server"]["fix"]


def test_a_tree_not_archived_in_full_is_a_warning_and_listed(octel: Octel, closed_opencode: str) -> None:
    from archiver.redact import Redactor
    from telemetry.store.db import session_scope
    from telemetry.tower.lost import record_lost

    missing = [
        {
            "error_kind": "connection",
            "what": "events",
            "session_id": "ses_r",
            "path": "/event",
            "status": None,
            "message": "event stream closed by the server",
        }
    ]
    with session_scope(octel.engine) as db:
        record_lost(
            db,
            server="http://oc",
            root="ses_r",
            top="ses_r",
            reason="incomplete",
            origin="mirror",
            missing=missing,
            redactor=Redactor(b"k" * 32, []),
            sessions=2,
            messages=5,
            archived=True,
        )
    _, checks = _checks(octel)
    assert checks["lost trees"]["status"] == "warn" and "octel lost" in checks["lost trees"]["fix"]
    listed = octel.json("lost", "--since", "1d")["items"]
    assert [(r["root_session_id"], r["reason"], r["archived"]) for r in listed] == [
        ("ses_r", "incomplete", True)
    ]
    assert listed[0]["missing"][0]["message"] == "event stream closed by the server"
    table = octel("lost")
    assert table.exit_code == 0 and "ses_r" in table.stdout and "stream closed" in table.stdout


def test_token_readable_by_others_fails(octel: Octel, closed_opencode: str) -> None:
    token = octel.data_dir / "ingest-token"
    token.write_text("x" * 40)
    token.chmod(0o644)
    _, checks = _checks(octel)
    assert checks["ingest token"]["status"] == "fail"
    assert checks["ingest token"]["fix"] == f"chmod 600 {token}"


def test_store_without_schema_and_unwritable_archive_folder(
    tmp_path: Path, closed_opencode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    url = f"sqlite:///{data / 'octel.db'}"
    eng = make_engine(url)
    with eng.connect():
        pass  # an empty SQLite file: reachable, no schema
    archives = tmp_path / "archives-file"
    archives.write_text("not a folder")
    monkeypatch.setenv("OCTEL_ARCHIVE_DIR", str(archives))
    octel = Octel(data, url, eng, CliRunner(env={"COLUMNS": "200"}))
    _, checks = _checks(octel)
    assert checks["database"]["status"] == "ok"
    assert checks["schema"]["status"] == "fail" and "no octel schema" in checks["schema"]["detail"]
    assert checks["archive folder"]["status"] == "fail"
    eng.dispose()


def test_unreachable_postgres_and_bad_settings(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"postgresql+psycopg://octel@127.0.0.1:{free_port()}/octel?connect_timeout=2",
        heartbeat_files="no-equals-sign",
        redact_values="short",
        opencode_url=f"http://127.0.0.1:{free_port()}",
        _env_file=None,  # type: ignore[call-arg]
    )
    with httpx.Client() as client:
        checks = {c.name: c for c in run_checks(settings, make_engine, client)}
    assert checks["database"].status == "fail" and "cannot connect" in checks["database"].detail
    assert checks["settings"].status == "fail"
    assert "not driver=glob" in checks["settings"].detail and "shorter than 12" in checks["settings"].detail


def test_a_server_that_is_not_opencode_fails(tmp_path: Path) -> None:
    """Fault injection: something answers on the URL, but not OpenCode's health document."""
    settings = Settings(data_dir=tmp_path, opencode_url="http://127.0.0.1:9", _env_file=None)  # type: ignore[call-arg]
    transport = httpx.MockTransport(lambda request: httpx.Response(404, text="<html>nope</html>"))
    with httpx.Client(transport=transport) as client:
        checks = {c.name: c for c in run_checks(settings, make_engine, client)}
    assert checks["opencode server"].status == "fail" and "404" in checks["opencode server"].detail


@pytest.mark.opencode
def test_a_real_opencode_server_is_healthy(
    octel: Octel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import opencode_harness as oh

    binary, how = oh.find_or_install()
    require(binary is not None, "opencode-ai", how)
    assert binary is not None
    # The health check never reaches the model, so the model URL can point nowhere.
    with oh.opencode_server(binary, tmp_path / "oc", f"http://127.0.0.1:{free_port()}/v1") as server:
        monkeypatch.setenv("OCTEL_OPENCODE_URL", server.url)
        monkeypatch.setenv("OCTEL_INGEST_TOKEN", "configured-token-0123456789")
        (octel.data_dir / "archives").mkdir(parents=True)
        code, checks = _checks(octel)
    assert checks["opencode server"]["status"] == "ok", checks["opencode server"]
    assert "healthy, version" in checks["opencode server"]["detail"]
    assert code == 0
    assert os.environ.get("OCTEL_OPENCODE_URL") == server.url


def test_an_opencode_server_never_configured_is_a_warning(
    octel: Octel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fresh install, or a fleet that runs only Claude Code: nothing to fix, exit 0."""
    monkeypatch.delenv("OCTEL_OPENCODE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env file that could set it
    (octel.data_dir / "archives").mkdir(parents=True)
    s = Settings(data_dir=octel.data_dir, database_url=octel.url, _env_file=None)  # type: ignore[call-arg]
    assert "opencode_url" not in s.model_fields_set
    with httpx.Client(transport=httpx.MockTransport(_refuse)) as client:
        checks = {c.name: c for c in run_checks(s, make_engine, client)}
    assert checks["opencode server"].status == "warn"
    assert "OCTEL_OPENCODE_URL" in checks["opencode server"].fix
    configured = s.model_copy(update={"opencode_url": s.opencode_url})
    configured.model_fields_set.add("opencode_url")
    with httpx.Client(transport=httpx.MockTransport(_refuse)) as client:
        checks = {c.name: c for c in run_checks(configured, make_engine, client)}
    assert checks["opencode server"].status == "fail"


def _refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)
