"""octel's settings, declared once as data.

Every setting is an ``OCTEL_*`` environment variable (or a ``.env`` entry) and, where a command
needs it, a flag. ``settings_doc()`` lists name, default and help for the README drift test.
``CoreSettings`` (telemetry/settings_core.py) declares the store, server and source settings, which
come first; this class adds watching, export, alerting and budgets after them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from telemetry.settings_core import DEFAULT_PORT, CoreSettings, expand_user
from telemetry.timeutil import parse_duration

# What only a setting's check needs is imported by the check: every command builds Settings.

__all__ = ["DEFAULT_PORT", "Settings", "settings_doc"]


class Settings(CoreSettings):
    """Configuration of one octel instance."""

    otel_export: bool = Field(
        False,
        description="Export each tree as an OpenTelemetry trace as it is archived (watch, archive, import); "
        "the endpoint and headers are the standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `…_HEADERS`.",
    )
    otel_service_name: str = Field(
        "octel", min_length=1, description="`service.name` of exported traces, and the Phoenix project."
    )
    otel_content: bool = Field(
        False, description="Add prompts, outputs and tool arguments/results (redacted) to exported spans."
    )
    otel_trace_url: str = Field(
        "",
        description="Link from a session to its trace: a URL with `{trace_id}` (optionally `{span_id}`, "
        "`{project}`, `{session_id}`); Phoenix: `http://127.0.0.1:6006/redirects/traces/{trace_id}`.",
    )
    otel_queue_trees: int = Field(
        256, ge=1, description="Trees waiting for background export at most; past that a tree is dropped."
    )
    mirror_budget_bytes: int = Field(
        256 * 2**20,
        ge=0,
        description="Bytes of messages `octel watch` mirrors from each server's events in memory; past "
        "that the largest sessions are kept in files under `<data_dir>/mirror/` (mode 0600).",
    )
    deny_asks_after: str = Field(
        "",
        description="`octel watch` replies `reject` to a permission ask unanswered this long (`5m`); "
        "empty: never. Audited, like every action.",
    )
    abort_retries_after: int | None = Field(
        None, ge=1, description="`octel watch` aborts a session whose provider retry reached this attempt."
    )
    on_stuck: str = Field(
        "",
        description="`octel watch` acts on a live stuck finding: `DETECTOR=abort` or `DETECTOR=notify`, "
        "comma-separated.",
    )
    watch_lease_seconds: float = Field(
        15.0,
        ge=3,
        le=3600,
        description="Lease of a followed server in the store: watchers sharing one store follow each "
        "server one at a time, and another takes over within this long after one dies.",
    )
    watch_max_event_bytes: int = Field(
        8 * 2**20,
        ge=4096,
        description="Longest line `octel watch` reads from a server's event stream, in bytes; a longer "
        "event is reported and skipped as it comes, and the events after it are read.",
    )
    alertmanager_url: str = Field(
        "",
        description="Alertmanager to send alerts to (`POST /api/v2/alerts`), e.g. `http://127.0.0.1:9093`; "
        "empty: none.",
    )
    alert_webhook_url: str = Field(
        "", description="Webhook to send alerts to (grouped per tree); empty: none."
    )
    alert_webhook_format: Literal["json", "slack"] = Field(
        "json",
        description="Payload of the alert webhook: `json` (octel's own) or `slack` (`text` and `blocks`).",
    )
    alert_webhook_secret: SecretStr | None = Field(
        None,
        description="Secret the webhook body is signed with: `X-Octel-Signature: sha256=HMAC(secret, "
        "TIMESTAMP.BODY)`, `X-Octel-Timestamp`; never logged.",
    )
    console_url: str = Field(
        "", description="Base URL of the console, for the link in each alert (`http://octel.example:8765`)."
    )
    alert_repeat_seconds: float = Field(
        300.0,
        ge=1,
        description="An alert whose state did not change is sent again after this long, not before.",
    )
    alert_queue_size: int = Field(
        1000, ge=1, description="Alerts waiting for delivery at most; past that one is dropped and counted."
    )
    alert_retries: int = Field(
        4,
        ge=1,
        le=20,
        description="Tries of one delivery (0.5 s, 1 s, 2 s, … apart) before it counts as failed.",
    )
    alert_fleet_seconds: float = Field(
        30.0,
        ge=1,
        description="How often `octel serve` checks the fleet for a daemon down or a long-running worker "
        "to alert on.",
    )
    search_catchup_seconds: float = Field(
        5.0,
        ge=0,
        description="How often `octel serve` and `octel watch` add what was archived since to the search "
        "index (`octel search` and `octel db reindex` catch up first); 0: each archive as it is written.",
    )

    budget_tree_usd: float | None = Field(
        None, gt=0, description="Spend limit of one session tree, US dollars (`octel watch` aborts it)."
    )
    budget_tree_tokens: int | None = Field(None, gt=0, description="Token limit of one session tree.")
    budget_driver_day_usd: float | None = Field(
        None, gt=0, description="Spend limit of each driver per UTC day, US dollars."
    )
    budget_driver_day_tokens: int | None = Field(
        None, gt=0, description="Token limit of each driver per UTC day."
    )
    budget_label_usd: float | None = Field(
        None, gt=0, description="Spend limit of each label (all its sessions), US dollars."
    )
    budget_label_tokens: int | None = Field(None, gt=0, description="Token limit of each label.")
    budget_fleet_day_usd: float | None = Field(
        None, gt=0, description="Spend limit of the whole fleet per UTC day, US dollars."
    )
    budget_fleet_day_tokens: int | None = Field(
        None, gt=0, description="Token limit of the fleet per UTC day."
    )
    budget_warn_at: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Share of a limit set above at which a warning alert is raised (1: none).",
    )
    budget_action: Literal["abort", "notify"] = Field(
        "abort",
        description="What a breach of a limit set above does: `abort` the OpenCode tree(s), or `notify` only "
        "(Claude Code sessions are always notify: the CLI cannot be stopped from outside).",
    )
    budgets_file: Path | None = Field(
        None,
        description="TOML or JSON file of budget rules and quota windows (docs/budgets.md); adds to the "
        "`OCTEL_BUDGET_*` limits.",
    )

    @field_validator("budgets_file", mode="before")
    @classmethod
    def _expand_budgets_file(cls, v: Any) -> Any:
        return expand_user(v)

    @field_validator("deny_asks_after")
    @classmethod
    def _duration(cls, v: str) -> str:
        if v.strip():
            parse_duration(v)
        return v.strip()

    @field_validator("on_stuck")
    @classmethod
    def _on_stuck(cls, v: str) -> str:
        if v.strip():  # blank: no rule (every default value is checked too)
            from tower.actions import parse_on_stuck

            parse_on_stuck([v])
        return v

    @field_validator("alertmanager_url", "alert_webhook_url", "console_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        v = v.strip()
        if v and not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r} is not an http:// or https:// URL")
        return v

    @field_validator("otel_trace_url")
    @classmethod
    def _trace_url(cls, v: str) -> str:
        if not v.strip():
            return ""
        from telemetry.otel_export.links import check_template

        return check_template(v.strip())


def settings_doc() -> list[tuple[str, str, str]]:
    """(environment variable, default, help) for every setting, in declaration order."""
    rows = []
    for name, field in Settings.model_fields.items():
        default = "" if field.default is None else str(field.default)
        rows.append((f"OCTEL_{name.upper()}", default, field.description or ""))
    return rows
