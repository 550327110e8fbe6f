"""One `Settings` object, read once from the environment (prefix `MNEMOSTREAM_`).

The engine never sees this object: the composition root (`services.runtime`) hands it plain
values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MNEMOSTREAM_", env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    kafka_bootstrap: str | None = Field(
        default=None, description="Kafka bootstrap servers; unset ⇒ the embedded local broker."
    )
    mongo_uri: SecretStr | None = Field(
        default=None, description="MongoDB URI; unset ⇒ the embedded MongoDB-wire server."
    )
    mongo_db: str = Field(default="mnemostream", description="Database name.")
    redis_url: SecretStr | None = Field(
        default=None, description="Redis/Valkey URL; unset ⇒ the embedded Redis."
    )
    state_dir: Path = Field(
        default=Path(".mnemostream"), description="Where `infra up` records the local stack."
    )
    group_prefix: str = Field(default="mnemostream", description="Consumer group id prefix.")
    session_timeout_ms: int = Field(default=10_000, ge=1000, description="Kafka group session.")
    heartbeat_interval_ms: int = Field(default=3_000, ge=100, description="Kafka heartbeat.")
    reply_fetch_wait_ms: int = Field(
        default=25, ge=1, description="fetch_max_wait_ms of the request/reply subscribers."
    )
    fetch_wait_ms: int = Field(
        default=100,
        ge=1,
        description="fetch_max_wait_ms of the ingest groups (freshness: post_turn → visible).",
    )
    embedder: Literal["local-minilm", "hashing"] = Field(
        default="local-minilm", description="Embedding model (hashing: tests only)."
    )
    embedder_threads: int = Field(default=1, ge=1, le=16, description="ONNX intra-op threads.")
    working_lines: int = Field(default=12, ge=1, le=200, description="Working buffer size.")
    session_ttl_days: float = Field(default=30, gt=0, description="Working session TTL.")
    min_vector_score: float = Field(default=0.25, ge=-1, le=1, description="Cosine threshold.")
    query_cache_ttl_seconds: int = Field(default=120, ge=1, description="Layer query cache TTL.")
    max_attempts: int = Field(default=3, ge=1, le=20, description="Tries before the DLQ.")
    retry_backoff_ms: int = Field(default=200, ge=0, description="First retry delay (doubles).")
    request_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Client request-reply timeout."
    )
