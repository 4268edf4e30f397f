"""Leases of followed servers: several watchers may share one store, and each server is
followed by one of them at a time.

A lease is a row (server, holder, expires_at) that its holder renews. A watcher killed with
`kill -9`, or whose host or network died, stops renewing; once `expires_at` has passed another
watcher takes the row over. A session-level advisory lock would be released at once when the
connection drops, but only while PostgreSQL notices the drop: a host gone from the network
holds it until TCP keepalive gives up. The row's expiry bounds the takeover at one lease period
whatever died, works on SQLite the same way, and shows who follows what.

Claims are serialised per server (an advisory transaction lock on PostgreSQL, the database
lock on SQLite), and times come from the database's clock on PostgreSQL, so watchers on hosts
whose clocks disagree still agree on when a lease runs out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlmodel import Session, col, update

from telemetry.store.action_models import WatchLease
from telemetry.store.locks import lock_key
from telemetry.timeutil import as_utc, utcnow

__all__ = ["Claim", "claim_lease", "db_now", "release_lease", "renew_lease"]


@dataclass(frozen=True)
class Claim:
    held: bool
    holder: str  # who holds it now (us when held)
    taken_from: str | None = None  # a previous holder whose lease had run out
    previous_start: datetime | None = None  # when that holder began following
    expires_in: float = 0.0  # not held: seconds until the holder's lease runs out


def db_now(db: Session) -> datetime:
    if db.get_bind().dialect.name == "postgresql":
        got = db.connection().execute(text("SELECT clock_timestamp()")).scalar_one()
        return as_utc(got)
    return utcnow()


def claim_lease(db: Session, server: str, holder: str, seconds: float) -> Claim:
    """Take or keep the lease of ``server`` unless another holder's lease still runs."""
    lock_key(db, "lease", server)
    now = db_now(db)
    until = now + timedelta(seconds=seconds)
    row = db.get(WatchLease, server)
    if row is None:
        db.add(WatchLease(server=server, holder=holder, acquired_at=now, renewed_at=now, expires_at=until))
        return Claim(True, holder)
    if row.holder == holder:
        row.renewed_at, row.expires_at = now, until
        db.add(row)
        return Claim(True, holder)
    if (left := (as_utc(row.expires_at) - now).total_seconds()) > 0:
        return Claim(False, row.holder, expires_in=left)
    before, began = row.holder, as_utc(row.acquired_at)
    row.holder, row.acquired_at, row.renewed_at, row.expires_at = holder, now, now, until
    db.add(row)
    return Claim(True, holder, taken_from=before, previous_start=began)


def renew_lease(db: Session, server: str, holder: str, seconds: float) -> bool:
    """Extend our lease; False when another watcher holds it now."""
    now = db_now(db)
    stmt = (
        update(WatchLease)
        .where(col(WatchLease.server) == server, col(WatchLease.holder) == holder)
        .values(renewed_at=now, expires_at=now + timedelta(seconds=seconds))
    )
    return bool(db.exec(stmt).rowcount)


def release_lease(db: Session, server: str, holder: str) -> None:
    """Let another watcher take over at once (a clean stop); the row stays, expired."""
    now = db_now(db)
    stmt = (
        update(WatchLease)
        .where(col(WatchLease.server) == server, col(WatchLease.holder) == holder)
        .values(expires_at=now)
    )
    db.exec(stmt)
