"""The settings read exactly these environment variables, each into its setting.

`VARIABLES` is the list the flat `Settings` model read before it was grouped into sections
(issue 14), plus the batch, partition and embedding-stage ones of issue 15, the previous
archive keys of issue 17, the MCP server's of issue 18 and the batch bounds of issue 29;
grouping must not rename, add or drop one. Each entry carries a probe value: set alone (with
the companions a valid combination needs), it must show up in the settings, so a variable that
is documented but no longer read fails here too.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from services.ops.config_doc import rows
from services.settings import Settings

FILE = "<an existing file>"

# variable (without the prefix) → a valid value differing from the default
VARIABLES: dict[str, str] = {
    "KAFKA_BOOTSTRAP": "probe-broker:9092",
    "MONGO_URI": "mongodb://probe-host:1/",
    "MONGO_DB": "probe-db",
    "REDIS_URL": "redis://probe-host:2/0",
    "STATE_DIR": "/probe/state",
    "GROUP_PREFIX": "probe-prefix",
    "ONLY_AGENTS": '["probe-agent"]',
    "SESSION_TIMEOUT_MS": "12345",
    "HEARTBEAT_INTERVAL_MS": "2345",
    "REPLY_FETCH_WAIT_MS": "31",
    "SEARCH_FETCH_WAIT_MS": "37",
    "FETCH_WAIT_MS": "131",
    "KAFKA_PARTITIONS": "12",
    "SOURCE_RETENTION_MS": "1209600000",
    "DERIVED_RETENTION_MS": "-1",
    "REQUEST_RETENTION_MS": "3600000",
    "BATCH_MAX_RECORDS": "77",
    "BATCH_WAIT_MS": "33",
    "MAX_POLL_INTERVAL_MS": "600000",
    "BATCH_BUDGET_MS": "45000",
    "EMBEDDING_DEFERRED": "false",
    "EMBEDDING_STAGE_BATCH": "99",
    "EMBEDDING_STAGE_MAX_TEXTS": "333",
    "EMBEDDING_STORE_DB": "probe-vectors",
    "EMBEDDING_DOCUMENT_NICE": "5",
    "EMBEDDER": "voyage",
    "EMBEDDER_THREADS": "7",
    "EMBEDDER_QUERY_THREADS": "3",
    "EMBEDDING_BASE_URL": "http://probe-embeddings/",
    "EMBEDDING_API_KEY": "probe-embedding-key",
    "EMBEDDING_MODEL": "probe-embedding-model",
    "EMBEDDING_DIMENSIONS": "777",
    "EMBEDDING_SEND_DIMENSIONS": "false",
    "EMBEDDING_TIMEOUT_SECONDS": "8.25",
    "WORKING_LINES": "17",
    "SESSION_TTL_DAYS": "31.5",
    "MIN_COSINE": "0.41",
    "MIN_LEXICAL": "0.43",
    "SEMANTIC_WEIGHT": "0.47",
    "HALF_LIFE_DAYS": "29.5",
    "MMR_LAMBDA": "0.53",
    "VECTOR_SEARCH": "atlas",
    "STATE_MAX_MB": "259",
    "STATE_MARGIN_MS": "12000",
    "BLAS_THREADS": "3",
    "RERANK_PROVIDER": "http",
    "RERANK_URL": "http://probe-rerank/",
    "RERANK_MODEL": "probe-rerank-model",
    "RERANK_API_KEY": "probe-rerank-key",
    "CLOUDFLARE_ACCOUNT_ID": "probe-account",
    "RERANK_TIMEOUT_SECONDS": "3.25",
    "RERANK_MIN_CANDIDATES": "11",
    "RERANK_DOMINANCE_DELTA": "0.061",
    "CACHE_PREFIX": "probe-cache",
    "EXTRACTOR": "llm",
    "LLM_BASE_URL": "http://probe-llm/",
    "LLM_API_KEY": "probe-llm-key",
    "LLM_MODEL": "probe-llm-model",
    "LLM_TIMEOUT_SECONDS": "8.75",
    "FACT_MAX_PER_TURN": "13",
    "FACT_MIN_CONFIDENCE": "0.67",
    "FACT_MAX_CHARS": "241",
    "ARCHIVE_ENCRYPTION_KEY": "cHJvYmUtYXJjaGl2ZS1rZXktb2YtMzItYnl0ZXMhISE=",  # base64 of 32 bytes
    "ARCHIVE_PREVIOUS_ENCRYPTION_KEYS": "cHJvYmUtcHJldmlvdXMta2V5LW9mLTMyLWJ5dGVzISE=",
    "EVENT_ENCRYPTION_KEY": "cHJvYmUtZXZlbnQtbWFzdGVyLWtleS1vZi0zMi1ieXQ=",  # issue 31
    "EVENT_PREVIOUS_ENCRYPTION_KEYS": "cHJvYmUtcHJldmlvdXMta2V5LW9mLTMyLWJ5dGVzISE=",
    "EVENT_KEYS_DB": "probe-keys",
    "EVENT_INGRESS": "true",
    "PINATA_JWT": "probe-pinata-jwt",
    "PINATA_API_KEY": "probe-pinata-key",
    "PINATA_API_SECRET": "probe-pinata-secret",
    "PINATA_BASE_URL": "http://probe-pinata/",
    "EMBEDDING_CACHE_TTL_SECONDS": "86399",
    "ACCESS_FLUSH_SECONDS": "1.25",
    "QUERY_CACHE_TTL_SECONDS": "121",
    "MAX_ATTEMPTS": "19",
    "RETRY_BACKOFF_MS": "201",
    "OUTAGE_WAIT_SECONDS": "121.5",
    "STALL_SECONDS": "301.5",
    "SEARCH_WORKERS": "63",
    "REQUEST_TIMEOUT_SECONDS": "5.25",
    "HTTP_HOST": "probe-http-host",
    "HTTP_PORT": "9465",
    "LAG_INTERVAL_SECONDS": "5.5",
    "GATEWAY_HOST": "probe-gateway-host",
    "GATEWAY_PORT": "8089",
    "GATEWAY_API_KEYS": '[{"key": "probe-tenant-key", "agent": "a"}]',
    "GATEWAY_OPERATOR_KEYS": "probe-operator-key",
    "GATEWAY_JWT_SECRET": "probe-jwt-secret-of-at-least-32-bytes",
    "GATEWAY_JWT_ALGORITHM": "HS384",
    "GATEWAY_JWT_MAX_TTL_SECONDS": "3601",
    "GATEWAY_ALLOW_ANONYMOUS": "true",
    "KAFKA_SECURITY_PROTOCOL": "SSL",
    "KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
    "KAFKA_SASL_USERNAME": "probe-sasl-user",
    "KAFKA_SASL_PASSWORD": "probe-sasl-password",
    "KAFKA_SSL_CAFILE": FILE,
    "KAFKA_SSL_CERTFILE": FILE,
    "KAFKA_SSL_KEYFILE": FILE,
    "MONGO_TLS": "true",
    "MONGO_TLS_CA_FILE": FILE,
    "MONGO_TLS_CERT_KEY_FILE": FILE,
    "MONGO_USERNAME": "probe-mongo-user",
    "MONGO_PASSWORD": "probe-mongo-password",
    "MONGO_AUTH_SOURCE": "probe-auth-db",
    "REDIS_USERNAME": "probe-redis-user",
    "REDIS_PASSWORD": "probe-redis-password",
    "REDIS_TLS": "true",
    "REDIS_TLS_CA_FILE": FILE,
    # issue 18: the MCP server's tenant and bind address
    "MCP_AGENT": "probe-mcp-agent",
    "MCP_USER": "probe-mcp-user",
    "MCP_THREAD": "probe-mcp-thread",
    "MCP_HOST": "probe-mcp-host",
    # issue 33: traces (OTLP/HTTP), off by default
    "OTEL_ENDPOINT": "http://probe-collector:4318",
    "OTEL_SAMPLE_RATIO": "0.25",
    "OTEL_SERVICE_NAME": "probe-service",
}

# what a variable needs beside it to make a valid combination
COMPANIONS: dict[str, dict[str, str]] = {
    "KAFKA_SASL_MECHANISM": {
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_USERNAME": "u",
        "KAFKA_SASL_PASSWORD": "p",
    },
    "KAFKA_SASL_USERNAME": {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_PASSWORD": "p"},
    "KAFKA_SASL_PASSWORD": {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_USERNAME": "u"},
    "KAFKA_SSL_CAFILE": {"KAFKA_SECURITY_PROTOCOL": "SSL"},
    "KAFKA_SSL_CERTFILE": {"KAFKA_SECURITY_PROTOCOL": "SSL"},
    "KAFKA_SSL_KEYFILE": {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CERTFILE": FILE},
    "MONGO_TLS_CA_FILE": {"MONGO_TLS": "true"},
    "MONGO_TLS_CERT_KEY_FILE": {"MONGO_TLS": "true"},
    "MONGO_USERNAME": {"MONGO_PASSWORD": "p"},
    "MONGO_PASSWORD": {"MONGO_USERNAME": "u"},
    "REDIS_USERNAME": {"REDIS_PASSWORD": "p"},
    "REDIS_TLS_CA_FILE": {"REDIS_TLS": "true"},
    "ARCHIVE_PREVIOUS_ENCRYPTION_KEYS": {
        "ARCHIVE_ENCRYPTION_KEY": "cHJvYmUtYXJjaGl2ZS1rZXktb2YtMzItYnl0ZXMhISE="
    },
    "EVENT_PREVIOUS_ENCRYPTION_KEYS": {
        "EVENT_ENCRYPTION_KEY": "cHJvYmUtZXZlbnQtbWFzdGVyLWtleS1vZi0zMi1ieXQ="
    },
}


def leaves(value: Any) -> Iterator[Any]:
    """Every plain value inside the settings, secrets revealed and paths as text."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, dict):
        for inner in value.values():
            yield from leaves(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from leaves(inner)
    elif isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, Path):
        yield str(value)
    else:
        yield value


def probe(text: str) -> Any:
    """The value `text` parses to, as `leaves` yields it."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("["):
        return "probe-agent" if "probe-agent" in text else "probe-tenant-key"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.upper().startswith("MNEMOSTREAM_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_the_documented_variables_are_the_same_as_before() -> None:
    assert sorted(row.variable for row in rows()) == sorted(
        f"MNEMOSTREAM_{name}" for name in VARIABLES
    )


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_each_variable_sets_its_setting(
    name: str, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    default = Counter(leaves(Settings()))
    files: dict[str, str] = {}
    for key, text in {**COMPANIONS.get(name, {}), name: VARIABLES[name]}.items():
        if text == FILE:
            path = tmp_path / f"{key.lower()}.pem"
            path.write_text("-")
            text = files[key] = str(path)
        clean_env.setenv(f"MNEMOSTREAM_{key}", text)
    expected = files.get(name) or probe(VARIABLES[name])
    gained = Counter(leaves(Settings())) - default
    assert gained[expected] >= 1, f"MNEMOSTREAM_{name} did not reach the settings"
