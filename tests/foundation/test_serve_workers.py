"""`octel serve --workers N` hands its settings to the workers through the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telemetry.settings import Settings
from web.app import settings_environment


def test_workers_get_back_every_setting_the_parent_had(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parent = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://octel:s3cret-password@db:5432/octel",
        archive_dir=tmp_path / "arch",
        host="0.0.0.0",
        port=9001,
        long_worker_seconds=42.5,
        ingest_token="ingest-token-0123456789",  # type: ignore[arg-type]
        read_token="read-token-0123456789",  # type: ignore[arg-type]
        redact_values="a-secret-value-123,another-secret-456",
        allowed_hosts="octel.example.org,*.internal",
        otel_export=True,
        archive_cache_bytes=0,
    )
    for name in list(os.environ):
        if name.startswith("OCTEL_"):
            monkeypatch.delenv(name)
    for name, value in settings_environment(parent).items():
        monkeypatch.setenv(name, value)
    worker = Settings(_env_file=None)  # type: ignore[call-arg]
    assert worker == parent
    assert (
        worker.ingest_token is not None
        and worker.ingest_token.get_secret_value() == "ingest-token-0123456789"
    )


def test_unset_settings_stay_unset() -> None:
    env = settings_environment(Settings(_env_file=None))  # type: ignore[call-arg]
    assert "OCTEL_DATABASE_URL" not in env and "OCTEL_READ_TOKEN" not in env
    assert all(value != "None" for value in env.values())
