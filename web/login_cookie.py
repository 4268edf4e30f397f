"""The console's login cookies and the throttle on guessing the read token: pure, in memory.

A cookie is `<issued-at>.<random id>.<signature>`, signed with a key derived from the read
token: it names no secret, it lapses after `OCTEL_LOGIN_HOURS`, changing the token logs every
browser out, and logging out revokes its id (kept until the cookie would have lapsed anyway).
Revocations and the throttle live in the server process's memory: a restart forgets them, and
under `octel serve --workers N` each worker keeps its own (a revoked cookie still lapses).

The throttle is per client address: a few wrong tokens are free, then each further one doubles
the wait (capped), and a login tried inside the wait is refused without being checked.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["LoginThrottle", "Logins"]

_MAX_REVOKED = 100_000
_MAX_ADDRESSES = 10_000


class Logins:
    """Issue, check and revoke console login cookies."""

    def __init__(self, read_token: str, max_age_s: float) -> None:
        self._key = hmac.new(read_token.encode(), b"octel-console-login-v2", hashlib.sha256).digest()
        self.max_age_s = max_age_s
        self._revoked: OrderedDict[str, float] = OrderedDict()  # id -> when its cookie lapses

    def _sign(self, issued: int, ident: str) -> str:
        return hmac.new(self._key, f"{issued}.{ident}".encode(), hashlib.sha256).hexdigest()

    def issue(self, now: float) -> str:
        issued, ident = int(now), secrets.token_urlsafe(16)
        return f"{issued}.{ident}.{self._sign(issued, ident)}"

    def _parts(self, value: str | None) -> tuple[int, str] | None:
        """(issued-at, id) of a well-signed cookie, else None."""
        issued_s, _, rest = (value or "").partition(".")
        ident, _, signature = rest.partition(".")
        if not issued_s.isdigit() or not ident or len(issued_s) > 12:
            return None
        issued = int(issued_s)
        if not secrets.compare_digest(signature.encode(), self._sign(issued, ident).encode()):
            return None
        return issued, ident

    def valid(self, value: str | None, now: float) -> bool:
        """Signed by this token, not lapsed, not issued in the future, not revoked."""
        parts = self._parts(value)
        if parts is None:
            return False
        issued, ident = parts
        return issued <= now + 60 and now < issued + self.max_age_s and ident not in self._revoked

    def revoke(self, value: str | None, now: float) -> None:
        """Forget a cookie for good (a forged or lapsed one needs no revoking)."""
        parts = self._parts(value)
        if parts is None:
            return
        issued, ident = parts
        while self._revoked and (
            len(self._revoked) >= _MAX_REVOKED or next(iter(self._revoked.values())) <= now
        ):
            self._revoked.popitem(last=False)  # lapsed first: ids are kept in issue order, near enough
        self._revoked[ident] = issued + self.max_age_s


@dataclass
class _Tries:
    failures: int = 0
    blocked_until: float = 0.0


class LoginThrottle:
    """Wrong read tokens per client address: `free` are free, then a wait of 1 s, 2 s, 4 s … up to `cap_s`."""

    def __init__(self, free: int = 5, cap_s: float = 300.0) -> None:
        self.free, self.cap_s = free, cap_s
        self._by_address: OrderedDict[str, _Tries] = OrderedDict()

    def wait(self, address: str, now: float) -> float:
        """Seconds before `address` may try again (0: now)."""
        tries = self._by_address.get(address)
        return max(0.0, tries.blocked_until - now) if tries else 0.0

    def failed(self, address: str, now: float) -> int:
        """Count a wrong token; the number of wrong tokens in a row from `address`."""
        tries = self._by_address.pop(address, None) or _Tries()
        self._by_address[address] = tries  # most recent last, so the oldest go first
        while len(self._by_address) > _MAX_ADDRESSES:
            self._by_address.popitem(last=False)
        tries.failures += 1
        if tries.failures > self.free:
            tries.blocked_until = now + min(self.cap_s, 2.0 ** (tries.failures - self.free - 1))
        return tries.failures

    def succeeded(self, address: str) -> None:
        self._by_address.pop(address, None)
