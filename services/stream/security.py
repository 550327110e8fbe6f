"""Security settings → the exact connection options of every client.

One place maps `Settings` (TLS, SASL, credentials) to what each driver takes, and every
client is built with it:

* `kafka_options`: keyword arguments of aiokafka's producer, consumer and admin client
  (`security_protocol`, `ssl_context`, `sasl_mechanism`, `sasl_plain_username`,
  `sasl_plain_password`); empty for PLAINTEXT, so `AIOKafkaX(bootstrap_servers=b,
  **kafka_options(s))` is the plain client then.
* `kafka_security`: the same as FastStream's `security=` object of a `KafkaBroker`.
* `mongo_options`: keyword arguments of `AsyncMongoClient` (`tls`, `tlsCAFile`,
  `tlsCertificateKeyFile`, `username`, `password`, `authSource`); options in the URI apply
  too, these win over them.
* `redis_url` and `redis_options`: the URL to pass to `Redis.from_url` (`rediss://` when TLS
  is on) and its keyword arguments (`username`, `password`, `ssl_ca_certs`); credentials in
  the URL win over these.

Secrets leave their `SecretStr` only here, into the drivers' arguments: `mask_url` is what
anything printing an endpoint uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from ssl import SSLContext
from typing import Any

from aiokafka.helpers import create_ssl_context
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512

from services.settings import Settings

NO_OPTIONS: Mapping[str, Any] = {}
"""Kafka options of a PLAINTEXT connection (the default of every `kafka_options` parameter)."""

_SASL = {"PLAIN": SASLPlaintext, "SCRAM-SHA-256": SASLScram256, "SCRAM-SHA-512": SASLScram512}


def _kafka_ssl_context(settings: Settings) -> SSLContext | None:
    """A verifying client context (hostname checked) for SSL and SASL_SSL, else None.
    Without a CA file the system's CAs are trusted."""
    if not settings.kafka.security_protocol.endswith("SSL"):
        return None
    context: SSLContext = create_ssl_context(
        cafile=settings.kafka.ssl_cafile,
        certfile=settings.kafka.ssl_certfile,
        keyfile=settings.kafka.ssl_keyfile,
    )
    return context


def _sasl_credentials(settings: Settings) -> tuple[str, str]:
    password = settings.kafka.sasl_password
    # Settings validation guarantees both for SASL_*; this guards a model_construct()ed one
    if not (settings.kafka.sasl_username and password):
        raise ValueError("Kafka SASL needs a user name and a password")
    return settings.kafka.sasl_username, password.get_secret_value()


def kafka_options(settings: Settings) -> dict[str, Any]:
    """aiokafka keyword arguments of the configured security (empty for PLAINTEXT)."""
    protocol = settings.kafka.security_protocol
    if protocol == "PLAINTEXT":
        return {}
    options: dict[str, Any] = {"security_protocol": protocol}
    context = _kafka_ssl_context(settings)
    if context is not None:
        options["ssl_context"] = context
    if protocol.startswith("SASL_"):
        username, password = _sasl_credentials(settings)
        options.update(
            sasl_mechanism=settings.kafka.sasl_mechanism,
            sasl_plain_username=username,
            sasl_plain_password=password,
        )
    return options


def kafka_security(settings: Settings) -> BaseSecurity | None:
    """The `security=` of a FastStream `KafkaBroker`: it turns into the same aiokafka
    arguments as `kafka_options` (None for PLAINTEXT)."""
    protocol = settings.kafka.security_protocol
    context = _kafka_ssl_context(settings)
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return BaseSecurity(ssl_context=context, use_ssl=True)
    username, password = _sasl_credentials(settings)
    kind = _SASL[settings.kafka.sasl_mechanism]
    return kind(username, password, ssl_context=context, use_ssl=protocol == "SASL_SSL")


def mongo_options(settings: Settings) -> dict[str, Any]:
    """`AsyncMongoClient`/`MongoClient` keyword arguments of the configured TLS and
    credentials (empty when none are set: the URI alone decides)."""
    options: dict[str, Any] = {}
    if settings.mongo.tls:
        options["tls"] = True
        if settings.mongo.tls_ca_file is not None:
            options["tlsCAFile"] = str(settings.mongo.tls_ca_file)
        if settings.mongo.tls_cert_key_file is not None:
            options["tlsCertificateKeyFile"] = str(settings.mongo.tls_cert_key_file)
    if settings.mongo.username and settings.mongo.password:
        options["username"] = settings.mongo.username
        options["password"] = settings.mongo.password.get_secret_value()
    if settings.mongo.auth_source:
        options["authSource"] = settings.mongo.auth_source
    return options


def redis_url(settings: Settings, url: str) -> str:
    """`url`, as `rediss://` when `redis_tls` is set (redis-py picks TLS by the scheme)."""
    if settings.redis.tls and url.startswith("redis://"):
        return "rediss://" + url.removeprefix("redis://")
    return url


def redis_options(settings: Settings, url: str) -> dict[str, Any]:
    """`Redis.from_url(redis_url(settings, url), **redis_options(settings, url))` keyword
    arguments: credentials, and the CA bundle when the connection is TLS."""
    options: dict[str, Any] = {}
    if settings.redis.password is not None:
        options["password"] = settings.redis.password.get_secret_value()
        if settings.redis.username:
            options["username"] = settings.redis.username
    tls = redis_url(settings, url).startswith("rediss://")
    if tls and settings.redis.tls_ca_file is not None:
        options["ssl_ca_certs"] = str(settings.redis.tls_ca_file)
    return options
