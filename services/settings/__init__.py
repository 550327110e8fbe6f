"""One `Settings` object, read once from the environment (prefix `MNEMOSTREAM_`).

The settings are grouped in sections — `kafka`, `mongo`, `redis`, `embedding`, `search`,
`extraction`, `archive`, `gateway`, `mcp` — with the process-wide ones at the top level. Each
setting keeps its flat environment variable (`settings.kafka.bootstrap` is
`MNEMOSTREAM_KAFKA_BOOTSTRAP`, `settings.search.workers` is `MNEMOSTREAM_SEARCH_WORKERS`), and
`Settings(...)` accepts the same flat names as keywords (`Settings(kafka_bootstrap=…,
mongo_db=…)`), or a section whole (`Settings(kafka=KafkaSettings(...))`). How:
`services.settings.base`.

The engine never sees this object: the composition root (`services.runtime`) hands it plain
values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from services.settings.base import (
    ENV_PREFIX,
    FlatEnvironment,
    flat_fields,
    route_flat_keys,
    settings_problem,
)
from services.settings.gateway import (
    JWT_SECRET_BYTES,
    TENANT_KEYS_FORMAT,
    GatewaySettings,
    TenantKey,
)
from services.settings.mcp import McpSettings
from services.settings.pipeline import ArchiveSettings, ExtractionSettings
from services.settings.retrieval import EmbeddingSettings, SearchSettings
from services.settings.sealing import SealingSettings
from services.settings.stores import (
    KafkaSettings,
    MongoSettings,
    RedisSettings,
    poll_problems,
    security_problems,
)
from services.settings.traces import TracesSettings

__all__ = [
    "JWT_SECRET_BYTES",
    "TENANT_KEYS_FORMAT",
    "ArchiveSettings",
    "EmbeddingSettings",
    "ExtractionSettings",
    "GatewaySettings",
    "KafkaSettings",
    "McpSettings",
    "MongoSettings",
    "RedisSettings",
    "SealingSettings",
    "SearchSettings",
    "Settings",
    "TenantKey",
    "TracesSettings",
    "default_state_dir",
    "security_problems",
    "settings_problem",
]


def default_state_dir() -> Path:
    """Where the local stack's state (`infra.json`, server logs, MongoDB data) lives when
    `MNEMOSTREAM_STATE_DIR` is unset: `$XDG_STATE_HOME/mnemostream`, else
    `~/.local/state/mnemostream` (the XDG Base Directory spec ignores a relative
    `XDG_STATE_HOME`). Per user, not per working directory, so every command finds the stack
    `infra up` started, whatever directory it runs in.

    The one resolver: `Settings.state_dir` and the `infra` commands' `--state-dir` both
    default to it."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "mnemostream"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        # a section field's alias is its variable under the prefix (`services.settings.base`)
        env_prefix_target="all",
        frozen=True,
        extra="ignore",
        # a validation error must not echo its input: that holds passwords and keys
        hide_input_in_errors=True,
    )

    state_dir: Path = Field(
        default_factory=default_state_dir,
        description=(
            "Where `infra up` records the local stack (default: `default_state_dir()`). That "
            "is `$XDG_STATE_HOME/mnemostream`, else `~/.local/state/mnemostream`: `infra up` "
            "records PIDs and ports there (`infra.json`), with the server logs and the "
            "MongoDB-wire data; every command reads it from there, whatever its working "
            "directory."
        ),
    )
    group_prefix: str = Field(
        default="mnemostream",
        description=("Consumer group id prefix. Consumer group ids are `<prefix>.<group>`."),
    )
    only_agents: list[str] = Field(
        default_factory=list,
        description=(
            "Process only these agents' events (a tenant's replay); empty ⇒ everyone's. A "
            "JSON list; other agents' events are acknowledged and skipped. `replay --agent` "
            "uses it."
        ),
    )
    working_lines: int = Field(default=12, ge=1, le=200, description="Working buffer size.")
    session_ttl_days: float = Field(
        default=30,
        gt=0,
        description=(
            "Working session TTL. Expiry of a working buffer after its last turn (TTL index)."
        ),
    )
    max_attempts: int = Field(default=3, ge=1, le=20, description="Tries before the DLQ.")
    retry_backoff_ms: int = Field(default=200, ge=0, description="First retry delay (doubles).")
    outage_wait_seconds: float = Field(
        default=120.0,
        gt=0,
        le=280,
        description=(
            "How long a message waits for an unreachable store before it is handed back "
            "uncommitted and read again (with `batch_budget_ms`, below "
            "`max_poll_interval_ms`). Until then a "
            "message whose store (MongoDB, Redis) is unreachable is retried with backoff (up "
            "to 5 s apart) without using up its attempts, so an outage dead-letters nothing."
        ),
    )
    stall_seconds: float = Field(
        default=300.0,
        gt=0,
        description="A partition whose group has lag but whose committed offset has not moved "
        "for this long is stalled: `mnemostream_partition_stalled` is 1 and /readyz is 503 in "
        "the process that holds it (checked every `lag_interval_seconds`).",
    )
    lag_interval_seconds: float = Field(
        default=5.0, gt=0, description="How often the consumer lag gauge is refreshed."
    )
    request_timeout_seconds: float = Field(
        default=5.0, gt=0, description=("Client request-reply timeout. Used by the demo's client.")
    )
    http_host: str = Field(
        default="127.0.0.1",
        description="Bind address of /livez, /readyz and /metrics of `mnemostream run` and "
        "`mnemostream schedule` (0.0.0.0 in a container).",
    )
    http_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="Port of /livez, /readyz and /metrics; 0 ⇒ not served "
        "(`run` and `schedule` default to 9464).",
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings, description="Kafka.")
    mongo: MongoSettings = Field(default_factory=MongoSettings, description="MongoDB.")
    redis: RedisSettings = Field(default_factory=RedisSettings, description="Redis.")
    embedding: EmbeddingSettings = Field(
        default_factory=EmbeddingSettings, description="Embedding."
    )
    search: SearchSettings = Field(default_factory=SearchSettings, description="Search.")
    extraction: ExtractionSettings = Field(
        default_factory=ExtractionSettings, description="Fact extraction."
    )
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings, description="Archives.")
    sealing: SealingSettings = Field(
        default_factory=SealingSettings, description="Sealed events (crypto-shredding)."
    )
    gateway: GatewaySettings = Field(default_factory=GatewaySettings, description="Gateway.")
    mcp: McpSettings = Field(default_factory=McpSettings, description="MCP server.")
    otel: TracesSettings = Field(default_factory=TracesSettings, description="Traces.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keywords, then the flat `MNEMOSTREAM_*` variables: no dotenv file or secrets
        directory is configured, and a section is never read from `MNEMOSTREAM_KAFKA` (JSON)
        or `MNEMOSTREAM_KAFKA__…`, so each setting has exactly one variable."""
        if not isinstance(env_settings, EnvSettingsSource):
            raise TypeError(f"unexpected environment source {env_settings!r}")
        return init_settings, FlatEnvironment(settings_cls, env_settings)

    @model_validator(mode="before")
    @classmethod
    def _sections_from_flat_names(cls, data: Any) -> Any:
        return route_flat_keys(cls, data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _check_combinations(self) -> Settings:
        """Reject security settings that would be ignored or cannot work, and timings that
        would let a batch outlast the poll interval, naming the variables to fix (a secret's
        value is never part of the message)."""
        problems = security_problems(self.kafka, self.mongo, self.redis)
        problems += poll_problems(self.kafka, self.outage_wait_seconds)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def with_values(self, **values: Any) -> Settings:
        """A copy with `values` changed, named by their flat names (`http_port=`,
        `mongo_db=`, `kafka_bootstrap=`). Like `model_copy(update=…)`, not validated."""
        top: dict[str, Any] = {}
        sections: dict[str, dict[str, Any]] = {}
        known = {flat: (section, name) for flat, section, name, _ in flat_fields(type(self))}
        for flat, value in values.items():
            if flat not in known:
                raise TypeError(f"no setting {flat!r}")
            section, name = known[flat]
            if section is None:
                top[name] = value
            else:
                sections.setdefault(section, {})[name] = value
        for section, changes in sections.items():
            top[section] = getattr(self, section).model_copy(update=changes)
        return self.model_copy(update=top)
