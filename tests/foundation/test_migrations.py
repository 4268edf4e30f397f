"""Migrations on SQLite and PostgreSQL: pytest-alembic's built-in tests plus `alembic check`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from pytest_alembic import Config as PytestAlembicConfig
from pytest_alembic.tests import (  # the plugin's built-in tests, collected here
    test_model_definitions_match_ddl,
    test_single_head_revision,
    test_up_down_consistency,
    test_upgrade,
)
from sqlalchemy import text
from sqlalchemy.engine import Engine

from telemetry.store import migrate
from telemetry.store.db import make_engine
from telemetry.store.migrate import current_revision, head_revision, upgrade

__all__ = [
    "test_model_definitions_match_ddl",
    "test_single_head_revision",
    "test_up_down_consistency",
    "test_upgrade",
]


@pytest.fixture
def alembic_engine(store_url: str) -> Iterator[Engine]:
    eng = make_engine(store_url)
    yield eng
    eng.dispose()


@pytest.fixture
def alembic_config() -> PytestAlembicConfig:
    script_location = migrate.alembic_config().get_main_option("script_location")
    return PytestAlembicConfig(config_options={"script_location": script_location})


def test_alembic_check_finds_no_drift(alembic_engine: Engine) -> None:
    upgrade(alembic_engine)
    cfg = migrate.alembic_config()
    with alembic_engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.check(cfg)  # raises when the models and the migrations disagree


def test_upgrade_is_idempotent_and_reaches_head(alembic_engine: Engine) -> None:
    upgrade(alembic_engine)
    upgrade(alembic_engine)
    assert current_revision(alembic_engine) == head_revision()


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert migrate.script_heads() == {head_revision()}


def test_a_store_at_head_is_not_upgraded_again(
    alembic_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not migrate.at_head(alembic_engine)  # a new store: no version table yet
    upgrade(alembic_engine)
    assert migrate.at_head(alembic_engine)
    ran: list[str] = []
    monkeypatch.setattr(command, "upgrade", lambda cfg, rev: ran.append(rev))
    upgrade(alembic_engine)
    assert ran == []
    below = ScriptDirectory.from_config(migrate.alembic_config()).get_revision("head").down_revision
    with alembic_engine.begin() as conn:  # one revision behind: Alembic runs again
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": str(below)})
    assert not migrate.at_head(alembic_engine)
    upgrade(alembic_engine)
    assert ran == ["head"]
