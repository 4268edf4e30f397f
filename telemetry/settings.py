"""octel's settings, declared once as data.

Every setting is an ``OCTEL_*`` environment variable (or a ``.env`` entry) and, where a command
needs it, a flag. ``settings_doc()`` lists name, default and help for the README drift test.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from telemetry.timeutil import parse_duration

# What only a setting's check needs is imported by the check: every command builds Settings.

__all__ = ["DEFAULT_PORT", "Settings", "settings_doc"]

DEFAULT_PORT = 8765


class Settings(BaseSettings):
    """Configuration of one octel instance."""

    model_config = SettingsConfigDict(env_prefix="OCTEL_", env_file=".env", extra="ignore")

    data_dir: Path = Field(
        Path("octel-data"), description="Folder for the SQLite file, archives, token and keys."
    )
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL; default `sqlite:///<data_dir>/octel.db`. PostgreSQL: `postgresql+psycopg://…`.",
    )
    archive_dir: Path | None = Field(
        None, description="Where archive files go; default `<data_dir>/archives`."
    )
    archive_store: Literal["files", "database"] | None = Field(
        None,
        description="Where archive documents live: `files` (the archive folder) or `database` (compressed, "
        "beside their index rows); default `database` when the store is PostgreSQL, else `files`.",
    )
    host: str = Field("127.0.0.1", description="Address `octel serve` listens on.")
    port: int = Field(DEFAULT_PORT, ge=1, le=65535, description="Port `octel serve` listens on.")
    long_worker_seconds: float = Field(
        600.0,
        gt=0,
        description="Heartbeat age past which a daemon with a cycle in flight is a long-running worker.",
    )
    ingest_token: SecretStr | None = Field(
        None,
        description="Bearer token for writes (16 characters at least); unset: created in "
        "`<data_dir>/ingest-token` (mode 0600).",
    )
    heartbeat_files: str = Field(
        "",
        description="Heartbeat files as `driver=glob` pairs, `;`-separated; a file's mtime is a beat.",
    )
    opencode_url: str = Field("http://127.0.0.1:4096", description="The OpenCode server to archive from.")
    opencode_password: SecretStr | None = Field(
        None,
        description="Password for OpenCode's HTTP Basic auth (OpenCode 2 always asks; 1.x when it "
        "runs with `OPENCODE_SERVER_PASSWORD`); never logged.",
    )
    opencode_username: str = Field("opencode", description="User name for OpenCode's HTTP Basic auth.")
    opencode_passwords: SecretStr | None = Field(
        None,
        description='A password per server, as a JSON object `{"http://host:port": "password"}`; a server '
        "not named uses `OCTEL_OPENCODE_PASSWORD`; never logged.",
    )
    opencode_service_file: Path | None = Field(
        None,
        description="OpenCode 2's background service registration, read for `--server service` and for "
        "the password of the server it names; default `$XDG_STATE_HOME/opencode/service.json`.",
    )
    opencode_urls: str = Field(
        "",
        description="Comma-separated OpenCode servers `octel watch` follows; default: `OCTEL_OPENCODE_URL`.",
    )
    redact_values: str = Field(
        "", description="Comma-separated secret values to redact (12 characters at least)."
    )
    redact_file: Path | None = Field(None, description="File with one secret value a line to redact.")
    price_file: Path | None = Field(
        None,
        description="JSON prices of models genai-prices does not list (private or gateway models, "
        "Claude Code's or OpenCode's by `provider/model`), US dollars per million tokens; "
        "see docs/claude.md.",
    )
    redact_key_file: Path | None = Field(
        None, description="Key of the redaction placeholders' hashes; default `<data_dir>/redact.key`."
    )
    allowed_hosts: str = Field(
        "",
        description="Comma-separated `Host` names the server answers; always `localhost`, `127.0.0.1`, "
        "`[::1]` and `OCTEL_HOST`.",
    )
    read_token: SecretStr | None = Field(
        None,
        description="When set (16 characters at least), reads need it: `Authorization: Bearer` for the "
        "API and `/metrics`, a login form for the console.",
    )
    login_hours: float = Field(
        12.0, gt=0, le=24 * 366, description="How long a console login lasts before the form asks again."
    )
    max_body_bytes: int = Field(
        2**20, ge=1024, description="Largest request body (413 above it) for every route but agent runs."
    )
    max_run_body_bytes: int = Field(
        64 * 2**20, ge=1024, description="Largest request body for `POST /api/v1/agent-runs`."
    )
    archive_cache_bytes: int = Field(
        64 * 2**20,
        ge=0,
        description="Bytes of archive JSON the console keeps parsed in memory (0: none).",
    )
    archive_max_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        le=2**40,
        description="Largest archive read or written, in bytes (a gzip file counts as what it expands to).",
    )
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

    @field_validator(
        "data_dir",
        "archive_dir",
        "redact_file",
        "redact_key_file",
        "opencode_service_file",
        "budgets_file",
        mode="before",
    )
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return Path(v).expanduser() if isinstance(v, str) and v else v

    @field_validator("opencode_passwords")
    @classmethod
    def _passwords(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            from archiver.credentials import parse_passwords

            parse_passwords(v.get_secret_value())  # the error names the field, never a value
        return v

    @field_validator("allowed_hosts")
    @classmethod
    def _host_patterns(cls, v: str) -> str:
        for h in filter(None, (h.strip() for h in v.split(","))):
            if "*" in h[1:] or (h.startswith("*") and not h.startswith("*.")):
                raise ValueError(f"{h!r} is not a host name or a pattern like *.example.org")
        return v

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

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'octel.db'}"

    @property
    def archives(self) -> Path:
        return self.archive_dir or self.data_dir / "archives"

    @property
    def archive_store_kind(self) -> Literal["files", "database"]:
        """`archive_store`, or its default for the store's engine."""
        if self.archive_store is not None:
            return self.archive_store
        return "database" if self.db_url.startswith("postgresql") else "files"

    @property
    def redact_key(self) -> Path:
        return self.redact_key_file or self.data_dir / "redact.key"

    @property
    def hosts(self) -> list[str]:
        """The `Host` names to answer: loopback names, the listening address, and the setting's."""
        listen = f"[{self.host}]" if ":" in self.host else self.host
        names = ["localhost", "127.0.0.1", "[::1]", listen]
        if self.host in ("0.0.0.0", "::"):  # every address: the machine's own name too
            names.append(socket.gethostname().lower())
        names += [h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip()]
        return list(dict.fromkeys(names))

    @property
    def heartbeat_globs(self) -> list[tuple[str, str]]:
        """`driver=glob;…` parsed into pairs; a malformed entry raises ValueError naming it."""
        pairs = []
        for entry in filter(None, (e.strip() for e in self.heartbeat_files.split(";"))):
            driver, sep, pattern = entry.partition("=")
            if not sep or not driver.strip() or not pattern.strip():
                raise ValueError(f"OCTEL_HEARTBEAT_FILES entry {entry!r} is not driver=glob")
            pairs.append((driver.strip(), pattern.strip()))
        return pairs


def settings_doc() -> list[tuple[str, str, str]]:
    """(environment variable, default, help) for every setting, in declaration order."""
    rows = []
    for name, field in Settings.model_fields.items():
        default = "" if field.default is None else str(field.default)
        rows.append((f"OCTEL_{name.upper()}", default, field.description or ""))
    return rows
