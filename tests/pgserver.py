"""A throwaway PostgreSQL server for the tests: initdb + pg_ctl on a temp folder and a free port."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import reaper
from realparts import free_port, which

__all__ = ["PG_BIN_DIRS", "create_database", "pg_binaries", "postgres_server"]

PG_BIN_DIRS = tuple(f"/usr/lib/postgresql/{v}/bin" for v in (17, 16, 15, 14, 13))
HOW = "install PostgreSQL (Debian: apt-get install postgresql) so initdb and pg_ctl exist"


def pg_binaries() -> tuple[str, str] | None:
    initdb = which("initdb", extra_dirs=PG_BIN_DIRS)
    pg_ctl = which("pg_ctl", extra_dirs=PG_BIN_DIRS)
    return (initdb, pg_ctl) if initdb and pg_ctl else None


def _as_postgres_user() -> dict[str, object]:
    """initdb refuses to run as root: run the server as the `postgres` (or `nobody`) user."""
    if os.geteuid() != 0:
        return {}
    import pwd

    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return {"user": pw.pw_uid, "group": pw.pw_gid}
    raise RuntimeError("running as root and no postgres/nobody user to run PostgreSQL as")


@contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[str]:
    """Yield a superuser URL `postgresql+psycopg://octel@127.0.0.1:PORT/postgres`.

    Tests run with fsync off; benchmarks ask for a `durable` server, as a fleet runs it."""
    bins = pg_binaries()
    assert bins is not None
    initdb, pg_ctl = bins
    who = _as_postgres_user()
    root = Path(tempfile.mkdtemp(prefix="octel-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if who:
        for p in (root, sock):
            os.chown(p, int(who["user"]), int(who["group"]))  # type: ignore[call-overload]
    port = free_port()
    env = {**os.environ, "LC_ALL": "C"}
    run = {"check": True, "capture_output": True, "env": env, **who}
    subprocess.run([initdb, "-D", str(data), "-U", "octel", "-A", "trust", "-E", "UTF8", "--no-sync"], **run)  # type: ignore[call-overload]
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c max_connections=200"
    if not durable:
        opts += " -c fsync=off"
    subprocess.run(
        [pg_ctl, "-D", str(data), "-o", opts, "-w", "-t", "60", "-l", str(root / "log"), "start"], **run
    )  # type: ignore[call-overload]
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    reaper.adopt(postmaster)
    try:
        yield f"postgresql+psycopg://octel@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], **{**run, "check": False})  # type: ignore[call-overload]
        reaper.release(postmaster)
        shutil.rmtree(root, ignore_errors=True)


def create_database(server_url: str) -> str:
    """A fresh, empty database on the server; returns its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    dsn = server_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
