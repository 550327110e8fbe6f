"""One `Settings` object, read once from the environment (prefix `MNEMOSTREAM_`).

The engine never sees this object: the composition root (`services.runtime`) hands it plain
values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.scope import MAX_ID_CHARS, Id

TENANT_KEYS_FORMAT = (
    'MNEMOSTREAM_GATEWAY_API_KEYS must be a JSON list of {"key", "agent", "user"?} objects: '
    "every API key is confined to one tenant (a key for every tenant is an operator key: "
    "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS)"
)

JWT_SECRET_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
"""Shortest gateway JWT secret per algorithm: the size of its hash (RFC 7518 §3.2)."""


class TenantKey(BaseModel):
    """A gateway API key and the tenant it acts for: `agent`, and only `user` when set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: SecretStr
    agent: Id = Field(min_length=1, max_length=MAX_ID_CHARS)
    user: Id | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)


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
        env_prefix="MNEMOSTREAM_",
        env_nested_delimiter="__",
        frozen=True,
        extra="ignore",
        # a validation error must not echo its input: that holds passwords and keys
        hide_input_in_errors=True,
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
        default_factory=default_state_dir,
        description="Where `infra up` records the local stack (default: `default_state_dir()`).",
    )
    group_prefix: str = Field(default="mnemostream", description="Consumer group id prefix.")
    only_agents: list[str] = Field(
        default_factory=list,
        description="Process only these agents' events (a tenant's replay); empty ⇒ everyone's.",
    )
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
    embedder: Literal["local-minilm", "hashing", "voyage", "openai"] = Field(
        default="local-minilm",
        description="Embedding model: local MiniLM, hashing (tests only), or an HTTP API.",
    )
    embedder_threads: int = Field(default=1, ge=1, le=16, description="ONNX intra-op threads.")
    embedding_base_url: str | None = Field(
        default=None,
        description="Base URL of the voyage/openai embeddings API (POST <base>/embeddings).",
    )
    embedding_api_key: SecretStr | None = Field(
        default=None, description="Bearer key of the embeddings API (none for local servers)."
    )
    embedding_model: str = Field(default="voyage-4-large", description="HTTP embedding model.")
    embedding_dimensions: int = Field(
        default=1024, ge=1, le=8192, description="Vector size the HTTP embedder must return."
    )
    embedding_send_dimensions: bool = Field(
        default=True, description="Ask the API for that size (off for fixed-size models)."
    )
    embedding_timeout_seconds: float = Field(
        default=8.0, gt=0, description="HTTP embedding deadline per request."
    )
    working_lines: int = Field(default=12, ge=1, le=200, description="Working buffer size.")
    session_ttl_days: float = Field(default=30, gt=0, description="Working session TTL.")
    min_cosine: float = Field(
        default=0.3, ge=-1, le=1, description="Cosine from which a candidate is a hit."
    )
    min_lexical: float = Field(
        default=0.34, ge=0, le=1, description="BM25 share from which a candidate is a hit."
    )
    semantic_weight: float = Field(
        default=0.7, ge=0, le=1, description="Weight of cosine vs BM25 in a layer's relevance."
    )
    half_life_days: float = Field(default=30, gt=0, description="Temporal decay half-life.")
    mmr_lambda: float = Field(default=0.7, ge=0, le=1, description="MMR relevance weight.")
    vector_search: Literal["exact", "atlas"] = Field(
        default="exact", description="exact cosine (numpy, per-tenant LRU) or Atlas $vectorSearch."
    )
    vector_cache_tenants: int = Field(
        default=256, ge=0, description="Tenant matrices kept by the exact vector index."
    )
    rerank_provider: Literal["none", "cloudflare", "http"] = Field(
        default="none", description="Reranker: none, Cloudflare Workers AI, or a /rerank API."
    )
    rerank_url: str | None = Field(
        default=None, description="URL of a Cohere/Voyage/Jina-style /rerank endpoint."
    )
    rerank_model: str = Field(
        default="@cf/baai/bge-reranker-base", description="Reranker model id."
    )
    rerank_api_key: SecretStr | None = Field(
        default=None, description="Bearer token of the reranker (Cloudflare API token too)."
    )
    cloudflare_account_id: str | None = Field(default=None, description="Cloudflare account.")
    rerank_timeout_seconds: float = Field(default=3.0, gt=0, description="Rerank timeout.")
    rerank_min_candidates: int = Field(default=3, ge=2, description="Rerank only from n hits.")
    rerank_dominance_delta: float = Field(
        default=0.05, ge=0, description="Skip rerank when top1 − top2 ≥ this."
    )
    cache_prefix: str | None = Field(
        default=None,
        description="Prefix of every Redis key (default: the database name), so deployments "
        "can share one Redis.",
    )
    extractor: Literal["rules", "llm", "none"] = Field(
        default="rules",
        description="Fact extractor: rule-based (offline), an OpenAI-compatible LLM, or none.",
    )
    llm_base_url: str | None = Field(
        default=None, description="Base URL of the OpenAI-compatible API (…/v1/chat/completions)."
    )
    llm_api_key: SecretStr | None = Field(default=None, description="Bearer key of that API.")
    llm_model: str = Field(default="gpt-4o-mini", description="Extraction model.")
    llm_timeout_seconds: float = Field(default=8.0, gt=0, description="Extraction timeout.")
    fact_max_per_turn: int = Field(default=5, ge=1, le=50, description="Facts kept per turn.")
    fact_min_confidence: float = Field(
        default=0.6, ge=0, le=1, description="Facts below this confidence are dropped."
    )
    fact_max_chars: int = Field(default=240, ge=40, le=1000, description="Longest fact kept.")
    archive_encryption_key: SecretStr | None = Field(
        default=None,
        description="Base64 of a 32-byte AES-256-GCM key; archives are pinned only encrypted.",
    )
    pinata_jwt: SecretStr | None = Field(default=None, description="Pinata JWT.")
    pinata_api_key: str | None = Field(default=None, description="Pinata API key.")
    pinata_api_secret: SecretStr | None = Field(default=None, description="Pinata API secret.")
    pinata_base_url: str = Field(
        default="https://api.pinata.cloud", description="Pinata API base URL."
    )
    embedding_cache_ttl_seconds: int = Field(
        default=86_400, ge=0, description="Embedding cache TTL (0 disables the cache)."
    )
    access_flush_seconds: float = Field(
        default=1.0, gt=0, description="How often returned items' access counts are written."
    )
    query_cache_ttl_seconds: int = Field(default=120, ge=1, description="Layer query cache TTL.")
    max_attempts: int = Field(default=3, ge=1, le=20, description="Tries before the DLQ.")
    retry_backoff_ms: int = Field(default=200, ge=0, description="First retry delay (doubles).")
    outage_wait_seconds: float = Field(
        default=120.0,
        gt=0,
        le=280,
        description="How long a message waits for an unreachable store before it is handed "
        "back uncommitted and read again (below Kafka's 300 s poll interval).",
    )
    stall_seconds: float = Field(
        default=300.0,
        gt=0,
        description="A partition whose group has lag but whose committed offset has not moved "
        "for this long is stalled: `mnemostream_partition_stalled` is 1 and /readyz is 503 in "
        "the process that holds it (checked every `lag_interval_seconds`).",
    )
    search_workers: int = Field(
        default=4,
        ge=1,
        le=64,
        description="pre_turn and layer-search requests one search process serves at once.",
    )
    request_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Client request-reply timeout."
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
    lag_interval_seconds: float = Field(
        default=5.0, gt=0, description="How often the consumer lag gauge is refreshed."
    )
    gateway_host: str = Field(default="127.0.0.1", description="HTTP gateway bind address.")
    gateway_port: int = Field(default=8080, ge=1, le=65535, description="HTTP gateway port.")
    gateway_api_keys: Annotated[list[TenantKey], NoDecode] = Field(
        default_factory=list,
        description="Gateway API keys, each confined to one tenant: a JSON list of "
        '`{"key": …, "agent": …, "user": …}` objects (`user` optional), sent as `X-API-Key` '
        "or `Authorization: Bearer`.",
    )
    gateway_operator_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Gateway operator keys (comma-separated or a JSON list): each acts for "
        "every tenant. For operators' tools, not for agent runtimes.",
    )
    gateway_jwt_secret: SecretStr | None = Field(
        default=None,
        description="Secret of gateway JWTs (`Authorization: Bearer`): a token acts for the "
        "tenant of its `agent` (and `user`) claims, or for every tenant with "
        '`scope: "operator"`.',
    )
    gateway_jwt_algorithm: Literal["HS256", "HS384", "HS512"] = Field(
        default="HS256", description="Algorithm of gateway JWTs (the only one accepted)."
    )
    gateway_jwt_max_ttl_seconds: int = Field(
        default=86_400,
        ge=60,
        le=31_536_000,
        description="Longest accepted JWT lifetime: `exp − iat` (or `exp − now` without `iat`).",
    )
    gateway_allow_anonymous: bool = Field(
        default=False,
        description="Serve the gateway without keys or JWT secret (explicit opt-in, dev only).",
    )

    # --- security (issue 7): TLS and credentials of Kafka, MongoDB and Redis --------------
    # Mapped to each client's options by `services.stream.security`; checked by `_check_security`.
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT", description="Kafka security protocol."
    )
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = Field(
        default="PLAIN", description="SASL mechanism (with SASL_PLAINTEXT or SASL_SSL)."
    )
    kafka_sasl_username: str | None = Field(default=None, description="SASL user name.")
    kafka_sasl_password: SecretStr | None = Field(default=None, description="SASL password.")
    kafka_ssl_cafile: Path | None = Field(
        default=None, description="PEM CA bundle of the brokers (default: the system's CAs)."
    )
    kafka_ssl_certfile: Path | None = Field(
        default=None, description="PEM client certificate (mutual TLS)."
    )
    kafka_ssl_keyfile: Path | None = Field(
        default=None, description="PEM private key of the client certificate."
    )
    mongo_tls: bool = Field(default=False, description="Connect to MongoDB over TLS.")
    mongo_tls_ca_file: Path | None = Field(
        default=None, description="PEM CA bundle of the MongoDB server (needs mongo_tls)."
    )
    mongo_tls_cert_key_file: Path | None = Field(
        default=None, description="PEM client certificate and key (mutual TLS; needs mongo_tls)."
    )
    mongo_username: str | None = Field(
        default=None, description="MongoDB user (instead of credentials in the URI)."
    )
    mongo_password: SecretStr | None = Field(default=None, description="MongoDB password.")
    mongo_auth_source: str | None = Field(
        default=None, description="Database holding the MongoDB user (driver default: admin)."
    )
    redis_username: str | None = Field(default=None, description="Redis ACL user name.")
    redis_password: SecretStr | None = Field(
        default=None, description="Redis password (`requirepass` or the ACL user's)."
    )
    redis_tls: bool = Field(
        default=False, description="Connect to Redis over TLS (as a `rediss://` URL does)."
    )
    redis_tls_ca_file: Path | None = Field(
        default=None, description="PEM CA bundle of the Redis server (needs TLS)."
    )
    # --- end of security settings ------------------------------------------------------------

    @field_validator("gateway_operator_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        """`a,b` or `["a", "b"]` from the environment; blank entries are dropped."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if isinstance(value, list):
            return [v.strip() if isinstance(v, str) else v for v in value if v != ""]
        return value

    @field_validator("gateway_api_keys", mode="before")
    @classmethod
    def _tenant_keys(cls, value: Any) -> Any:
        """A JSON list of `{key, agent, user?}` objects (blank ⇒ none). A bare key is refused
        with the way out, never silently made a key for every tenant."""
        if isinstance(value, str):
            text = value.strip()
            try:
                value = json.loads(text) if text else []
            except json.JSONDecodeError:
                raise ValueError(TENANT_KEYS_FORMAT) from None
        if not isinstance(value, list) or any(isinstance(v, str | SecretStr) for v in value):
            raise ValueError(TENANT_KEYS_FORMAT)
        return value

    @field_validator("gateway_jwt_secret", mode="before")
    @classmethod
    def _blank_secret_is_unset(cls, value: Any) -> Any:
        """An empty variable (as compose passes an unset one) means no JWT secret."""
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_gateway_credentials(self) -> Settings:
        """Every key names one caller: none is empty or listed twice (in either list); the
        JWT secret is at least as long as the algorithm's hash (RFC 7518 §3.2)."""
        secret = self.gateway_jwt_secret
        shortest = JWT_SECRET_BYTES[self.gateway_jwt_algorithm]
        if secret is not None and len(secret.get_secret_value().encode()) < shortest:
            raise ValueError(
                f"MNEMOSTREAM_GATEWAY_JWT_SECRET must be at least {shortest} bytes for "
                f"{self.gateway_jwt_algorithm}"
            )
        keys = [k.key for k in self.gateway_api_keys] + list(self.gateway_operator_keys)
        values = [k.get_secret_value() for k in keys]
        if any(not v.strip() for v in values):
            raise ValueError("a gateway API key is empty")
        if len(set(values)) != len(values):
            raise ValueError(
                "a gateway key is listed twice (MNEMOSTREAM_GATEWAY_API_KEYS, "
                "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS): each key must name exactly one caller"
            )
        return self

    @model_validator(mode="after")
    def _check_security(self) -> Settings:
        """Reject security settings that would be ignored or cannot work, naming the
        variables to fix (the values themselves are never part of the message)."""
        problems = security_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _env(field: str) -> str:
    return f"MNEMOSTREAM_{field.upper()}"


def security_problems(settings: Settings) -> list[str]:
    """What is wrong with the security settings' combination (empty when nothing is)."""
    s, problems = settings, []
    sasl = s.kafka_security_protocol.startswith("SASL_")
    ssl = s.kafka_security_protocol.endswith("SSL")
    if sasl and not (s.kafka_sasl_username and s.kafka_sasl_password):
        problems.append(
            f"{_env('kafka_security_protocol')}={s.kafka_security_protocol} needs "
            f"{_env('kafka_sasl_username')} and {_env('kafka_sasl_password')}"
        )
    if not sasl and (s.kafka_sasl_username or s.kafka_sasl_password):
        problems.append(
            "Kafka SASL credentials are set but "
            f"{_env('kafka_security_protocol')} is {s.kafka_security_protocol}: "
            "use SASL_PLAINTEXT or SASL_SSL"
        )
    kafka_files = ("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile")
    if not ssl and any(getattr(s, name) for name in kafka_files):
        problems.append(
            f"Kafka TLS files are set but {_env('kafka_security_protocol')} is "
            f"{s.kafka_security_protocol}: use SSL or SASL_SSL"
        )
    if s.kafka_ssl_keyfile and not s.kafka_ssl_certfile:
        problems.append(f"{_env('kafka_ssl_keyfile')} needs {_env('kafka_ssl_certfile')}")
    if not s.mongo_tls and (s.mongo_tls_ca_file or s.mongo_tls_cert_key_file):
        problems.append(f"MongoDB TLS files are set but {_env('mongo_tls')} is not true")
    if bool(s.mongo_username) != bool(s.mongo_password):
        problems.append(f"{_env('mongo_username')} and {_env('mongo_password')} go together")
    if s.redis_username and not s.redis_password:
        problems.append(f"{_env('redis_username')} needs {_env('redis_password')}")
    url = s.redis_url.get_secret_value() if s.redis_url else ""
    if s.redis_tls_ca_file and not (s.redis_tls or url.startswith("rediss://")):
        problems.append(
            f"{_env('redis_tls_ca_file')} is set but Redis is not TLS: set "
            f"{_env('redis_tls')}=true or use a rediss:// URL"
        )
    for name in (*kafka_files, "mongo_tls_ca_file", "mongo_tls_cert_key_file", "redis_tls_ca_file"):
        path = getattr(s, name)
        if path is not None and not path.is_file():
            problems.append(f"{_env(name)}: no such file {path}")
    return problems


class NotConfigured(RuntimeError):
    """No server URL was configured and no local stack is running."""
