"""The legacy `/api/sessions/archived` endpoints, and that no request reads outside the archives.

Traversal attempts go out as raw URLs (so the encoding under test is exactly what is sent):
encoded, doubly encoded, absolute, `..`, backslashes, NUL, overlong UTF-8, symlinks.
"""

from __future__ import annotations

import gzip
import os
import string
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pgserver
import pytest
from console_seed import Store, build_store
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_templates import migrate_by_copy

from archiver.files import archive_name
from telemetry.settings import Settings
from web.api_archived import resolve_name, valid_name
from web.app import create_app

SECRET = "TOP-SECRET-OUTSIDE-THE-ARCHIVES"


def test_list_is_newest_first_and_capped(client: TestClient, store: Store) -> None:
    body = client.get("/api/sessions/archived").json()
    assert body["count"] == len(store.seeded.sessions) and body["truncated"] is False
    stamps = [i["archived_at"] for i in body["items"]]
    assert stamps == sorted(stamps, reverse=True)
    assert {i["file"] for i in body["items"]} == set(store.seeded.files)
    capped = client.get("/api/sessions/archived", params={"limit": 3}).json()
    assert capped["count"] == 3 and capped["truncated"] is True
    assert capped["items"] == body["items"][:3]
    r = client.get("/api/sessions/archived", params={"limit": 501})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


def test_detail_reads_the_named_archive(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["subagent_tree"]
    name = store.seeded.sessions[sid]["file"]
    r = client.get("/api/sessions/archived/detail", params={"file": name})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["session_id"] == sid and doc["schema_version"] == 3 and doc["messages"]
    # a compressed archive reads the same
    gz = store.settings.archives / (name + ".gz")
    gz.write_bytes(gzip.compress((store.settings.archives / name).read_bytes()))
    assert client.get("/api/sessions/archived/detail", params={"file": gz.name}).json() == doc


def _plant_outside(store: Store) -> Path:
    """A secret next to the archive folder, and symlinks inside the folder pointing at it."""
    secret = store.settings.archives.parent / "secret.json"
    secret.write_text(f'{{"secret": "{SECRET}"}}')
    os.symlink(secret, store.settings.archives / "2026-01-01T000000Z__sub0__x__y__link.json")
    os.symlink(store.settings.archives.parent, store.settings.archives / "up.json")
    os.symlink("../secret.json", store.settings.archives / "relative-link.json")
    (store.settings.archives / "folder.json").mkdir()
    return secret


@pytest.fixture
def outside(store: Store) -> Path:
    return _plant_outside(store)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def attacked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Path]]:
    """One seeded store with the secret planted, on each backend, and a client on it, for the
    attacks: none of them writes, so they share it instead of seeding a store each."""
    root = tmp_path_factory.mktemp("attacked")
    url = (
        pgserver.create_database(request.getfixturevalue("pg_server"))
        if request.param == "postgres"
        else f"sqlite:///{root / 'octel.db'}"
    )
    config = Settings(
        data_dir=root / "data",
        database_url=url,
        ingest_token="test-token-0123456789",  # type: ignore[arg-type]
        search_catchup_seconds=0,
        _env_file=None,  # type: ignore[call-arg]
    )
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        migrate_by_copy(config.db_url)
        store = build_store(config, child.pid)
        secret = _plant_outside(store)
        with TestClient(create_app(store.settings)) as c:
            yield c, secret
    finally:
        child.kill()
        child.wait()


ATTACKS = [
    "../secret.json",
    "..%2Fsecret.json",
    "..%2fsecret.json",
    "%2E%2E%2Fsecret.json",
    "%252E%252E%252Fsecret.json",
    "%25252e%25252e%25252fsecret.json",
    "..%5Csecret.json",
    "..\\secret.json",
    "%2Fetc%2Fpasswd",
    "/etc/passwd",
    "%2F{outside}",
    "{outside}",
    "file%3A%2F%2F{outside}",
    "%C0%AE%C0%AE%2Fsecret.json",
    "%E2%80%A5%2Fsecret.json",
    "....%2F%2Fsecret.json",
    "secret.json%00.json",
    ".%2Fsecret.json",
    "2026-01-01T000000Z__sub0__x__y__link.json",
    "up.json",
    "relative-link.json",
    "folder.json",
    "up.json%2Fsecret.json",
    "",
    "x" * 600 + ".json",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_traversal_attempts_are_404(attacked: tuple[TestClient, Path], attack: str) -> None:
    client, outside = attacked
    raw = attack.replace("{outside}", str(outside).replace("/", "%2F"))
    r = client.get(f"/api/sessions/archived/detail?file={raw}")
    # a NUL anywhere in a query is refused before any route: 422 naming the parameter
    expected = (422, "invalid_request") if "%00" in attack else (404, "not_found")
    assert (r.status_code, r.json()["error"]["code"]) == expected, (attack, r.status_code, r.text[:200])
    assert SECRET not in r.text


def test_traversal_in_the_path_never_reaches_the_detail(client: TestClient, outside: Path) -> None:
    for path in ("/api/sessions/archived/detail/../../secret.json", "/api/sessions/archived/%2e%2e/detail"):
        r = client.get(path)
        assert r.status_code in (404, 422) and SECRET not in r.text


# ---- the validation itself, property-tested -------------------------------------------------

_PIECES = st.sampled_from(
    [
        "..",
        ".",
        "/",
        "\\",
        "%2e",
        "%2f",
        "%252e",
        "%00",
        "\x00",
        "~",
        "json",
        ".json",
        ".gz",
        "a",
        "Z",
        "__",
        "-",
        "_",
        " ",
        "\u2025",
        "\uff0e",
        "secret",
        "up",
    ]
)
_NAMES = st.one_of(st.lists(_PIECES, max_size=8).map("".join), st.text(max_size=40))


@pytest.fixture
def archive_dir(tmp_path: Path) -> Path:
    root = tmp_path / "archives"
    root.mkdir()
    (root / "2026-11-29T100000Z__sub0__l__a__ses_1.json").write_text("{}")
    (tmp_path / "secret.json").write_text("{}")
    os.symlink(tmp_path / "secret.json", root / "secret.json")
    os.symlink(tmp_path, root / "up")
    return root


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_NAMES)
def test_resolve_never_leaves_the_folder(archive_dir: Path, name: str) -> None:
    found = resolve_name(archive_dir, name)
    if found is not None:
        assert found.parent == archive_dir.resolve() and found.is_file() and not found.is_symlink()
        assert valid_name(name)


@given(name=_NAMES)
def test_valid_names_are_bare_file_names(name: str) -> None:
    if valid_name(name):
        # a bare name: no separator, no NUL, not a dot-name (`a..json` is one harmless file name)
        assert "/" not in name and "\\" not in name and "\x00" not in name
        assert not name.startswith(".") and name.endswith((".json", ".json.gz"))
        assert set(name) <= set(string.ascii_letters + string.digits + "._-")


_ANY = st.one_of(st.none(), st.text(max_size=60))


@given(
    stamp=st.datetimes(timezones=st.just(UTC)),
    depth=st.integers(0, 50),
    label=_ANY,
    agent=_ANY,
    sid=st.text(min_size=1, max_size=200),
    gz=st.booleans(),
)
def test_every_name_the_archiver_writes_is_accepted(
    stamp: datetime, depth: int, label: str | None, agent: str | None, sid: str, gz: bool
) -> None:
    name = archive_name(stamp.isoformat(), depth, label, agent, sid, compress=gz)
    assert valid_name(name), name
