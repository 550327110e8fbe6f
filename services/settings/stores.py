"""The three servers' sections: Kafka, MongoDB, Redis — where they are, how to log in, TLS.

Their security settings are mapped to each client's options by `services.stream.security`;
`security_problems` rejects a combination that would be ignored or cannot work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from schemas import topics
from services.settings.base import Section, env_name


class KafkaSettings(Section):
    """Kafka: the brokers, their security, the topics' retention, and the consumer groups'
    timing."""

    def retention_ms(self, topic: str) -> int:
        """The retention.ms a topic is created with, by its class (`topics.retention_class`)."""
        return {
            "source": self.source_retention_ms,
            "derived": self.derived_retention_ms,
            "requests": self.request_retention_ms,
        }[topics.retention_class(topic)]

    bootstrap: str | None = Field(
        default=None,
        validation_alias="kafka_bootstrap",
        description=(
            "Kafka bootstrap servers; unset ⇒ the embedded local broker. The local stack is "
            "the one `mnemostream infra up` recorded "
            "([operations.md](operations.md#local-servers))."
        ),
    )
    session_timeout_ms: int = Field(
        default=6_000,
        ge=1000,
        validation_alias="session_timeout_ms",
        description=(
            "Kafka group session. A join takes about half of it on the local broker, so it "
            "sets how fast a group is ready; heartbeats come from their own task, never "
            "blocked by a batch or the model."
        ),
    )
    heartbeat_interval_ms: int = Field(
        default=2_000,
        ge=100,
        validation_alias="heartbeat_interval_ms",
        description="Kafka heartbeat.",
    )
    reply_fetch_wait_ms: int = Field(
        default=25,
        ge=1,
        validation_alias="reply_fetch_wait_ms",
        description=(
            "fetch_max_wait_ms of the request/reply subscribers (items, admin, sessions, "
            "reliability) and of the invalidation group."
        ),
    )
    search_fetch_wait_ms: int = Field(
        default=10,
        ge=1,
        validation_alias="search_fetch_wait_ms",
        description=(
            "fetch_max_wait_ms of the search group (pre_turn, layer search, rerank: one "
            "consumer). The local broker answers a waiting fetch only when this wait ends, "
            "so a request waits for up to this long before it is read."
        ),
    )
    fetch_wait_ms: int = Field(
        default=100,
        ge=1,
        validation_alias="fetch_wait_ms",
        description="fetch_max_wait_ms of the ingest groups (freshness: post_turn → visible).",
    )
    partitions: int = Field(
        default=8,
        ge=1,
        le=1024,
        validation_alias="kafka_partitions",
        description=(
            "Partitions of each stream topic a writer group reads (turns, remember, facts, "
            "knowledge, workflows, embeddings, changes) when the topics are created: the most "
            "processes one group can usefully run. An existing topic keeps its count."
        ),
    )
    source_retention_ms: int = Field(
        default=topics.DEFAULT_RETENTION_MS["source"],
        ge=-1,
        validation_alias="source_retention_ms",
        description=(
            "retention.ms of the source topics (turns, remember, facts, knowledge, workflows) "
            "when they are created: -1 keeps every record, so `replay` can rebuild all of "
            "memory. A finite value makes replay rebuild only what is left, which the "
            "groups and replay report ([operations.md](operations.md#keeping-the-log))."
        ),
    )
    derived_retention_ms: int = Field(
        default=topics.DEFAULT_RETENTION_MS["derived"],
        ge=-1,
        validation_alias="derived_retention_ms",
        description=(
            "retention.ms of the derived topics (changes, embeddings, dead letters) when "
            "they are created; -1 keeps every record."
        ),
    )
    request_retention_ms: int = Field(
        default=topics.DEFAULT_RETENTION_MS["requests"],
        ge=-1,
        validation_alias="request_retention_ms",
        description=(
            "retention.ms of the request and reply topics (search, items, sessions, admin, "
            "jobs, …) when they are created; -1 keeps every record."
        ),
    )
    batch_max_records: int = Field(
        default=2_000,
        ge=1,
        le=10_000,
        validation_alias="batch_max_records",
        description=(
            "Most records one batch of a writer group holds: each batch is written with a few "
            "bulk writes and committed once."
        ),
    )
    batch_wait_ms: int = Field(
        default=50,
        ge=1,
        le=10_000,
        validation_alias="batch_wait_ms",
        description=(
            "How long a writer group waits for records when none are buffered (the batch "
            "linger); a batch is handed over as soon as records are there."
        ),
    )
    max_poll_interval_ms: int = Field(
        default=300_000,
        ge=1_000,
        le=3_600_000,
        validation_alias="max_poll_interval_ms",
        description=(
            "Kafka's poll interval: a consumer that does not poll for this long leaves its "
            "group, and the commit of the batch it was working on is refused. A batch's work "
            "(`batch_budget_ms`) and a store outage's wait (`outage_wait_seconds`) end well "
            "inside it."
        ),
    )
    batch_budget_ms: int = Field(
        default=30_000,
        ge=100,
        validation_alias="batch_budget_ms",
        description=(
            "How long a writer group works on one batch. The batch runs in slices sized by "
            "the measured speed of its work (a slow model makes them small); once this is "
            "spent, the finished records are committed and the rest is handed back to the "
            "next poll (read again, never lost or run twice). At most a quarter of "
            "`max_poll_interval_ms`, and with `outage_wait_seconds` below it."
        ),
    )
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT",
        validation_alias="kafka_security_protocol",
        description=(
            "Kafka security protocol. How the protocols, SASL and TLS files combine: "
            "[security.md](security.md)."
        ),
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = Field(
        default="PLAIN",
        validation_alias="kafka_sasl_mechanism",
        description="SASL mechanism (with SASL_PLAINTEXT or SASL_SSL).",
    )
    sasl_username: str | None = Field(
        default=None,
        validation_alias="kafka_sasl_username",
        description=("SASL user name. Required by, and only allowed with, a `SASL_*` protocol."),
    )
    sasl_password: SecretStr | None = Field(
        default=None, validation_alias="kafka_sasl_password", description="SASL password."
    )
    ssl_cafile: Path | None = Field(
        default=None,
        validation_alias="kafka_ssl_cafile",
        description=(
            "PEM CA bundle of the brokers (default: the system's CAs). For `SSL` / `SASL_SSL`."
        ),
    )
    ssl_certfile: Path | None = Field(
        default=None,
        validation_alias="kafka_ssl_certfile",
        description="PEM client certificate (mutual TLS).",
    )
    ssl_keyfile: Path | None = Field(
        default=None,
        validation_alias="kafka_ssl_keyfile",
        description=(
            "PEM private key of the client certificate. Unset: the key is in the certificate file."
        ),
    )


class MongoSettings(Section):
    """MongoDB: the server, the database, credentials and TLS."""

    uri: SecretStr | None = Field(
        default=None,
        validation_alias="mongo_uri",
        description=(
            "MongoDB URI; unset ⇒ the embedded MongoDB-wire server. Secret, as it can carry a"
            " password."
        ),
    )
    db: str = Field(
        default="mnemostream", validation_alias="mongo_db", description="Database name."
    )
    tls: bool = Field(
        default=False,
        validation_alias="mongo_tls",
        description=("Connect to MongoDB over TLS. Or put `tls=true` in the URI."),
    )
    tls_ca_file: Path | None = Field(
        default=None,
        validation_alias="mongo_tls_ca_file",
        description="PEM CA bundle of the MongoDB server (needs mongo_tls).",
    )
    tls_cert_key_file: Path | None = Field(
        default=None,
        validation_alias="mongo_tls_cert_key_file",
        description="PEM client certificate and key (mutual TLS; needs mongo_tls).",
    )
    username: str | None = Field(
        default=None,
        validation_alias="mongo_username",
        description=("MongoDB user (instead of credentials in the URI). Goes with the password."),
    )
    password: SecretStr | None = Field(
        default=None, validation_alias="mongo_password", description="MongoDB password."
    )
    auth_source: str | None = Field(
        default=None,
        validation_alias="mongo_auth_source",
        description="Database holding the MongoDB user (driver default: admin).",
    )


class RedisSettings(Section):
    """Redis (or Valkey): the server, credentials, TLS, and the key prefix."""

    url: SecretStr | None = Field(
        default=None,
        validation_alias="redis_url",
        description=(
            "Redis/Valkey URL; unset ⇒ the embedded Redis. Secret, as it can carry a password."
        ),
    )
    cache_prefix: str | None = Field(
        default=None,
        validation_alias="cache_prefix",
        description="Prefix of every Redis key (default: the database name), so deployments "
        "can share one Redis.",
    )
    username: str | None = Field(
        default=None,
        validation_alias="redis_username",
        description=("Redis ACL user name. Needs the password."),
    )
    password: SecretStr | None = Field(
        default=None,
        validation_alias="redis_password",
        description="Redis password (`requirepass` or the ACL user's).",
    )
    tls: bool = Field(
        default=False,
        validation_alias="redis_tls",
        description="Connect to Redis over TLS (as a `rediss://` URL does).",
    )
    tls_ca_file: Path | None = Field(
        default=None,
        validation_alias="redis_tls_ca_file",
        description="PEM CA bundle of the Redis server (needs TLS).",
    )


def poll_problems(kafka: KafkaSettings, outage_wait_seconds: float) -> list[str]:
    """What keeps a batch's work or an outage's wait from ending well inside the poll
    interval (empty when nothing does), naming the variables to fix."""
    poll, budget = kafka.max_poll_interval_ms, kafka.batch_budget_ms
    problems = []
    if budget * 4 > poll:
        problems.append(
            f"{env_name('batch_budget_ms')} ({budget}) must be at most a quarter of "
            f"{env_name('max_poll_interval_ms')} ({poll})"
        )
    if outage_wait_seconds * 1000 + budget >= poll:
        problems.append(
            f"{env_name('outage_wait_seconds')} ({outage_wait_seconds:g} s) plus "
            f"{env_name('batch_budget_ms')} ({budget} ms) must stay below "
            f"{env_name('max_poll_interval_ms')} ({poll} ms)"
        )
    return problems


def security_problems(
    kafka: KafkaSettings, mongo: MongoSettings, redis: RedisSettings
) -> list[str]:
    """What is wrong with the security settings' combination (empty when nothing is), naming
    the variables to fix (never their values)."""
    problems = []
    protocol = kafka.security_protocol
    sasl, ssl = protocol.startswith("SASL_"), protocol.endswith("SSL")
    if sasl and not (kafka.sasl_username and kafka.sasl_password):
        problems.append(
            f"{env_name('kafka_security_protocol')}={protocol} needs "
            f"{env_name('kafka_sasl_username')} and {env_name('kafka_sasl_password')}"
        )
    if not sasl and (kafka.sasl_username or kafka.sasl_password):
        problems.append(
            "Kafka SASL credentials are set but "
            f"{env_name('kafka_security_protocol')} is {protocol}: "
            "use SASL_PLAINTEXT or SASL_SSL"
        )
    if not ssl and (kafka.ssl_cafile or kafka.ssl_certfile or kafka.ssl_keyfile):
        problems.append(
            f"Kafka TLS files are set but {env_name('kafka_security_protocol')} is "
            f"{protocol}: use SSL or SASL_SSL"
        )
    if kafka.ssl_keyfile and not kafka.ssl_certfile:
        problems.append(f"{env_name('kafka_ssl_keyfile')} needs {env_name('kafka_ssl_certfile')}")
    if not mongo.tls and (mongo.tls_ca_file or mongo.tls_cert_key_file):
        problems.append(f"MongoDB TLS files are set but {env_name('mongo_tls')} is not true")
    if bool(mongo.username) != bool(mongo.password):
        problems.append(
            f"{env_name('mongo_username')} and {env_name('mongo_password')} go together"
        )
    if redis.username and not redis.password:
        problems.append(f"{env_name('redis_username')} needs {env_name('redis_password')}")
    url = redis.url.get_secret_value() if redis.url else ""
    if redis.tls_ca_file and not (redis.tls or url.startswith("rediss://")):
        problems.append(
            f"{env_name('redis_tls_ca_file')} is set but Redis is not TLS: set "
            f"{env_name('redis_tls')}=true or use a rediss:// URL"
        )
    files = {
        "kafka_ssl_cafile": kafka.ssl_cafile,
        "kafka_ssl_certfile": kafka.ssl_certfile,
        "kafka_ssl_keyfile": kafka.ssl_keyfile,
        "mongo_tls_ca_file": mongo.tls_ca_file,
        "mongo_tls_cert_key_file": mongo.tls_cert_key_file,
        "redis_tls_ca_file": redis.tls_ca_file,
    }
    for flat, path in files.items():
        if path is not None and not path.is_file():
            problems.append(f"{env_name(flat)}: no such file {path}")
    return problems
