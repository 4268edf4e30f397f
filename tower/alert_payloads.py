"""What each channel is sent for a batch of alerts (pure: no I/O, no clock; times are passed in).

- Alertmanager's v2 API takes a list of alerts, each a label set (its identity: alertname,
  severity, kind, tree, session, cycle, key and the producer's labels), annotations (summary,
  console link), ``startsAt``, ``endsAt`` and ``generatorURL``. A firing alert ends a few repeat
  intervals ahead, so it lapses by itself if octel stops refreshing it; a resolved one ends now.
- Webhooks get one payload per tree (`group_by_tree`): generic JSON, or Slack's ``text`` and
  ``blocks``. The body is signed: ``X-Octel-Signature: sha256=HEX`` over ``TIMESTAMP.BODY`` with
  the shared secret, ``X-Octel-Timestamp`` the Unix time, so a receiver can refuse replays.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Literal, NotRequired, TypedDict

from tower.alert import Alert

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "alertmanager_alerts",
    "console_link",
    "group_by_tree",
    "sign",
    "slack_payload",
    "verify",
    "webhook_payload",
]

SIGNATURE_HEADER = "X-Octel-Signature"
TIMESTAMP_HEADER = "X-Octel-Timestamp"
_LAPSE_REPEATS = 3  # a firing alert not refreshed for this many repeat intervals ends by itself
_ICON = {"firing": ":rotating_light:", "resolved": ":white_check_mark:"}


class _Annotations(TypedDict):
    summary: str
    console: str


class AmAlert(TypedDict):
    """One alert of Alertmanager's ``POST /api/v2/alerts`` body."""

    labels: dict[str, str]
    annotations: _Annotations
    startsAt: str
    endsAt: str
    generatorURL: NotRequired[str]


class WebhookAlert(TypedDict):
    key: str
    kind: str
    severity: str
    state: str
    summary: str
    session_id: str | None
    cycle_id: str | None
    labels: dict[str, str]
    url: str


class WebhookPayload(TypedDict):
    """The generic webhook body: one tree's alerts."""

    version: int
    source: str
    status: Literal["firing", "resolved"]
    tree_id: str | None
    sent_at: str
    alerts: list[WebhookAlert]


class _Text(TypedDict):
    type: str
    text: str


class _Block(TypedDict):
    type: str
    text: _Text


class SlackPayload(TypedDict):
    """Slack's incoming-webhook body."""

    text: str
    blocks: list[_Block]


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def console_link(base: str, path: str) -> str:
    """The console page of an alert: the base URL and the alert's path (``/#/session/ses_1``)."""
    if not base:
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")


def _labels(a: Alert) -> dict[str, str]:
    out = {"alertname": f"octel_{a.kind}", "severity": a.severity, "kind": a.kind, "key": a.key}
    for name, value in (("tree", a.tree_id), ("session", a.session_id), ("cycle", a.cycle_id)):
        if value:
            out[name] = value
    for k, v in a.labels.items():
        out.setdefault(k, str(v))  # the identity labels above are never overwritten by a producer
    return {k: v for k, v in out.items() if v != ""}


def alertmanager_alerts(
    alerts: Iterable[Alert], base: str, now: float, repeat_s: float, started: dict[str, float] | None = None
) -> list[AmAlert]:
    """The body of ``POST /api/v2/alerts``; ``started`` holds when each key first fired."""
    out: list[AmAlert] = []
    for a in alerts:
        link = console_link(base, a.path)
        begin = (started or {}).get(a.key, now)
        end = now if a.state == "resolved" else now + _LAPSE_REPEATS * repeat_s
        item: AmAlert = {
            "labels": _labels(a),
            "annotations": {"summary": a.summary, "console": link},
            "startsAt": rfc3339(min(begin, now)),
            "endsAt": rfc3339(end),
        }
        if link.startswith(("http://", "https://")):  # Alertmanager refuses a relative URL
            item["generatorURL"] = link
        out.append(item)
    return out


def group_by_tree(alerts: Iterable[Alert]) -> list[tuple[str | None, list[Alert]]]:
    """Alerts of one tree together (those of no tree in one group), in first-seen order."""
    groups: dict[str | None, list[Alert]] = {}
    for a in alerts:
        groups.setdefault(a.tree_id, []).append(a)
    return list(groups.items())


def _one(a: Alert, base: str) -> WebhookAlert:
    return {
        "key": a.key,
        "kind": a.kind,
        "severity": a.severity,
        "state": a.state,
        "summary": a.summary,
        "session_id": a.session_id,
        "cycle_id": a.cycle_id,
        "labels": dict(a.labels),
        "url": console_link(base, a.path),
    }


def webhook_payload(tree_id: str | None, alerts: Sequence[Alert], base: str, now: float) -> WebhookPayload:
    """Generic JSON: one tree's alerts; ``status`` is firing while any of them fires."""
    firing = any(a.state == "firing" for a in alerts)
    return {
        "version": 1,
        "source": "octel",
        "status": "firing" if firing else "resolved",
        "tree_id": tree_id,
        "sent_at": rfc3339(now),
        "alerts": [_one(a, base) for a in alerts],
    }


def _line(a: Alert, base: str) -> str:
    link = console_link(base, a.path)
    shown = f"<{link}|{a.key}>" if link.startswith(("http://", "https://")) else a.key
    return f"{_ICON[a.state]} *{a.state}* [{a.severity}] {a.summary} ({shown})"


def slack_payload(tree_id: str | None, alerts: Sequence[Alert], base: str) -> SlackPayload:
    """Slack's incoming-webhook shape: ``text`` (what notifications show) and ``blocks``."""
    head = f"octel: {len(alerts)} alert(s)" + (f" in tree {tree_id}" if tree_id else "")
    lines = [_line(a, base) for a in alerts]
    blocks: list[_Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": head}}]
    blocks += [{"type": "section", "text": {"type": "mrkdwn", "text": line}} for line in lines]
    return {"text": "\n".join([head, *lines]), "blocks": blocks}


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``sha256=HEX`` of HMAC-SHA256 over ``TIMESTAMP.BODY``."""
    mac = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: bytes, timestamp: int, body: bytes, signature: str) -> bool:
    """What a receiver checks (constant time)."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)
