"""The configuration: every knob of DESIGN.md's configuration table, read once from the environment and
`.env` by the composition root (bot.py), and the one-line error that stops start-up. The Telegram,
Redis and web settings are plain values here; only handlers/ and bot.py act on them."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, Field, RedisDsn, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agent.clock import today_shanghai
from agent.handoff import ServiceHours
from db.audit_store import DatabaseUrl

DEFAULT_CATALOG = Path("data/shop.db")


class Settings(BaseSettings):
    """Every knob of DESIGN.md's configuration table; read from the environment and `.env`."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      env_ignore_empty=True)

    bot_token: SecretStr | None = None
    telegram_api_base: AnyHttpUrl | None = None
    bot_mode: Literal["polling", "webhook"] = "polling"
    webhook_url: AnyHttpUrl | None = None
    webhook_secret: SecretStr | None = None
    webhook_port: int = Field(8080, ge=1, le=65535)
    health_host: str = "127.0.0.1"   # /healthz and /metrics outside webhook mode
    redis_url: RedisDsn | None = None
    redis_cluster: bool = False   # REDIS_URL names one node of a Redis Cluster
    # replicas an inbox append / a worker's acknowledgement waits for (WAIT) before it counts as done; unset:
    # 1 with REDIS_CLUSTER=1, 0 on one node (no WAIT at all). README, Scaling out.
    redis_wait_replicas: int | None = Field(None, ge=0, le=5)
    redis_wait_timeout_ms: int = Field(1000, ge=1, le=60_000)
    database_path: Path = Path("data/shop.db")
    index_path: Path | None = None
    openai_api_key: SecretStr | None = None
    openai_base_url: AnyHttpUrl | None = None
    llm_model: str = "qwen-plus"
    llm_timeout_seconds: float = Field(20.0, gt=0, le=300)
    llm_max_retries: int = Field(2, ge=0, le=10)
    llm_connect_timeout_seconds: float = Field(3.0, gt=0, le=300)
    llm_breaker_failures: int = Field(3, ge=1, le=1000)
    llm_breaker_cooldown_seconds: float = Field(60.0, gt=0, le=3600)
    turn_budget_seconds: float = Field(40.0, gt=0, le=600)
    embedding_model: str | None = None
    embedding_base_url: AnyHttpUrl | None = None
    embedding_dimensions: int | None = Field(None, ge=1, le=8192)
    embedding_concurrency: int = Field(4, ge=1, le=64)
    operator_ids: Annotated[list[int], NoDecode] = Field(default_factory=list)
    operator_chat_id: int | None = None
    handoff_idle_minutes: float = Field(30.0, gt=0, le=7 * 24 * 60)
    service_hours: str | None = None
    memory_ttl_seconds: int = Field(7 * 24 * 3600, ge=60)
    redis_prefix: str = "kefu:"
    rate_limit_messages: int = Field(20, ge=1, le=10_000)
    rate_limit_window_seconds: int = Field(60, ge=1, le=86_400)
    max_message_chars: int = Field(1000, ge=10, le=4096)
    audit_db: Path | SecretStr = Path("data/audit.db")   # a SQLite file, or a postgresql:// URL (kept secret)
    audit_retention_days: int = Field(90, ge=1, le=3650)
    audit_path: Path | None = None   # an optional JSON Lines copy, for log shippers
    audit_web_port: int | None = Field(None, ge=1, le=65535)
    audit_web_token: SecretStr | None = None
    audit_web_host: str = "127.0.0.1"
    kefu_today: date | None = None
    inbox_partitions: int = Field(4, ge=1, le=256)
    inbox_lease_ms: int = Field(15_000, ge=500, le=600_000)
    inbox_concurrency: int = Field(32, ge=1, le=10_000)
    turn_process: Literal["auto", "on", "off"] = "auto"   # Telegram modes: customer turns in a second process
    search_mode: Literal["hybrid", "lexical"] = "hybrid"   # lexical: no embeddings at all, only on purpose
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] | None = None

    def check_catalog(self, path: Path | None = None) -> None:
        """A catalog path of one's own that does not exist is refused at once (before anything loads): a
        typo must never serve the demo shop's prices to a real shop's customers. Only the default
        data/shop.db may be created with the demo catalog."""
        path = path or self.database_path
        if path.exists():
            return
        own = self.explicit("database_path", DEFAULT_CATALOG) if path == self.database_path else \
            path.resolve() != DEFAULT_CATALOG.resolve()
        if own:
            raise StartupError(f"DATABASE_PATH: no catalog at {path} — check the path, or create it with "
                               f"`python bot.py import-catalog PRODUCTS.csv --path {path}` (or `init-db --path` for "
                               "the demo data); leave DATABASE_PATH unset for the demo catalog in data/shop.db")

    def explicit(self, name: str, default: Path) -> bool:
        """The setting names a path of its own: set, and not the default location (relative to here)."""
        value = getattr(self, name)
        return name in self.model_fields_set and value is not None and Path(value).resolve() != default.resolve()

    @property
    def today(self) -> date:
        """KEFU_TODAY when set (demos and tests are then deterministic), else today in Asia/Shanghai."""
        return self.kefu_today or today_shanghai()

    @field_validator("audit_db", mode="before")
    @classmethod
    def _audit_db(cls, value: object) -> object:
        """A URL is kept as a secret (it may hold a password), never read as a path; anything else is a path."""
        if isinstance(value, str):
            return SecretStr(value) if _URL.match(value) else Path(value)
        return value

    @field_validator("operator_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("service_hours")
    @classmethod
    def _check_hours(cls, value: str | None) -> str | None:
        if value is not None:
            ServiceHours.parse(value)
        return value

    @property
    def wait_replicas(self) -> int:
        """REDIS_WAIT_REPLICAS, or its default: 1 on a Redis Cluster (each master has a replica), 0 on one node."""
        if self.redis_wait_replicas is not None:
            return self.redis_wait_replicas
        return 1 if self.redis_cluster else 0

    @property
    def resolved_index_path(self) -> Path:
        return self.index_path or self.database_path.with_suffix(".index")

    def check_webhook(self) -> None:
        if self.bot_mode == "webhook" and (self.webhook_url is None or self.webhook_secret is None):
            raise StartupError("BOT_MODE=webhook needs WEBHOOK_URL and WEBHOOK_SECRET")

    def check_inbox(self, role: str) -> None:
        """`bot.py receive` and `bot.py work` run the durable inbox's roles apart: Telegram and Redis."""
        if self.bot_token is None:
            raise StartupError(f"`bot.py {role}` needs BOT_TOKEN")
        if self.redis_url is None:
            raise StartupError(f"`bot.py {role}` needs REDIS_URL: the inbox lives in Redis Streams")


class StartupError(Exception):
    """A problem that stops start-up; its message is one clear line for the operator."""


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "configuration"
        # The input value is deliberately not echoed: it may be a secret.
        raise StartupError(f"invalid {name}: {first['msg']}") from None


# a scheme of two letters or more and a colon: `postgresql://…` would read as the path `postgresql:/…`
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
POSTGRES_SCHEMES = ("postgresql", "postgres")


def audit_target(value: Path | SecretStr | str, name: str = "AUDIT_DB") -> Path | DatabaseUrl:
    """AUDIT_DB (or a command's --db) as the store it names: the path of a SQLite file, or a PostgreSQL URL
    (`postgresql://…`, kept whole but shown without its password). Any other URL is refused in one line
    (its scheme named, the rest — it may hold a password — not echoed), never taken as a folder to create."""
    text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
    url = _URL.match(text)
    if not url:
        return Path(text)
    scheme = url.group(1).lower()
    if scheme in POSTGRES_SCHEMES:
        return DatabaseUrl(text)
    raise StartupError(f"{name}: a {scheme}: URL is not supported — {name} takes the path of a SQLite file "
                       "(default data/audit.db) or a postgresql:// URL")


def audit_db_for(db_option: str | None, settings: Settings) -> Path | DatabaseUrl:
    """The audit store a command reads: its `--db` option, else AUDIT_DB."""
    return audit_target(db_option, "--db") if db_option else audit_target(settings.audit_db)
