"""The settings every octel command reads: the store, the server and who may use it, the OpenCode
servers archived from, redaction, and the limits on what is read and written.

``telemetry.settings.Settings`` adds watching, export, alerting and budgets on top; import that.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# What only a setting's check needs is imported by the check: every command builds Settings.

__all__ = ["DEFAULT_PORT", "CoreSettings", "expand_user"]

DEFAULT_PORT = 8765


def expand_user(v: Any) -> Any:
    """A path setting given as text, with `~` expanded; anything else as it came."""
    return Path(v).expanduser() if isinstance(v, str) and v else v


class CoreSettings(BaseSettings):
    """The store, the server and the sources of one octel instance (declared first, listed first)."""

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

    @field_validator(
        "data_dir",
        "archive_dir",
        "redact_file",
        "redact_key_file",
        "opencode_service_file",
        mode="before",
    )
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return expand_user(v)

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
