"""Security settings against real servers (no mocked drivers).

* Redis: `redis-server --requirepass`, and `--tls-port` with a CA made here: the Runtime's
  client (`open_runtime`) and its query cache work with the password and TLS settings and
  fail with an authentication / TLS error without them.
* MongoDB: SecantusDB with `--auth` (SCRAM) and TLS: `open_runtime` ensures its schema with
  the settings; without credentials or TLS the server refuses.
* Kafka: Tansu 0.6 has no usable TLS listener (`--cert` and `--key` cannot be given
  together, neither alone makes one) and in memory storage no way to create a SASL user
  before `--authentication` is on, so only the failing path is real here: a client with SASL
  settings is refused by an authenticating broker without any secret in its errors or logs.
  The option mapping (aiokafka and FastStream) is tested in
  tests/unit/test_security_settings.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError
from pydantic import SecretStr
from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from typer.testing import CliRunner

from engine.adapters.redis_cache import RedisQueryCache
from engine.errors import DependencyFailed
from services.endpoints import Endpoints
from services.ops.stack import infra_app
from services.runtime import open_runtime
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.security import kafka_options, mongo_options
from services.stream.topics import create_topics
from tests.support.certs import Certs, make_certs
from tests.support.secure_servers import redis_server, secantus_server, tansu_with_authentication

pytestmark = pytest.mark.integration

REDIS_PW = "redis-pw-5e0b"
MONGO_PW = "mongo-pw-c41d"
KAFKA_PW = "kafka-pw-8a2f"
WRONG_PW = "wrong-pw-13f7"
SECRETS = (REDIS_PW, MONGO_PW, KAFKA_PW, WRONG_PW)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure_mongo(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[str]:
    """SecantusDB requiring TLS and SCRAM authentication as `app`."""
    with secantus_server(
        tmp_path_factory.mktemp("mongo"), certs=certs, username="app", password=MONGO_PW
    ) as uri:
        yield uri


def settings_for(stack: Endpoints, db: str, **values: Any) -> Settings:
    """The stack's servers, the database `db`, and `values` (which win)."""
    base = {
        "kafka_bootstrap": stack.kafka_bootstrap,
        "mongo_uri": SecretStr(stack.mongo_uri),
        "redis_url": SecretStr(stack.redis_url),
        "mongo_db": db,
        "embedder": "hashing",
    }
    return Settings(**{**base, **values})


def with_redis(stack: Endpoints, db: str, url: str, **extra: Any) -> Settings:
    return settings_for(stack, db, redis_url=SecretStr(url), **extra)


# --- Redis ------------------------------------------------------------------------------------


async def test_runtime_redis_works_with_the_password(
    stack: Endpoints, tmp_path: Path, unique: Callable[[str], str]
) -> None:
    with redis_server(tmp_path, password=REDIS_PW) as url:
        settings = with_redis(stack, unique("sec"), url, redis_password=SecretStr(REDIS_PW))
        async with open_runtime(settings) as rt:
            assert await rt.redis.ping()
            cache = RedisQueryCache(rt.redis, prefix=settings.mongo.db)
            await cache.set("k", b"v", 60)
            assert await cache.get("k") == b"v"
            assert await cache.bump(["ns"], 60) == 1


async def test_runtime_redis_without_or_with_a_wrong_password_fails_clearly(
    stack: Endpoints,
    tmp_path: Path,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with redis_server(tmp_path, password=REDIS_PW) as url:
        for password in (None, SecretStr(WRONG_PW)):
            settings = with_redis(stack, unique("sec"), url, redis_password=password)
            async with open_runtime(settings) as rt:
                with pytest.raises(AuthenticationError) as refused:
                    await rt.redis.ping()
                cache = RedisQueryCache(rt.redis, prefix=settings.mongo.db)
                assert await cache.get("k") is None  # fail-soft read: a logged miss
                with pytest.raises(DependencyFailed) as failed:
                    await cache.bump(["ns"], 60)
            assert isinstance(failed.value.__cause__, AuthenticationError)
            assert_no_secret(str(refused.value), str(failed.value), repr(rt), repr(settings))
    assert "cache get failed" in caplog.text
    assert_no_secret(caplog.text)


async def test_runtime_redis_over_tls(
    stack: Endpoints, tmp_path: Path, certs: Certs, unique: Callable[[str], str]
) -> None:
    with redis_server(tmp_path, password=REDIS_PW, certs=certs) as url:
        secure = with_redis(
            stack,
            unique("sec"),
            url,
            redis_password=SecretStr(REDIS_PW),
            redis_tls=True,
            redis_tls_ca_file=certs.ca,
        )
        async with open_runtime(secure) as rt:
            assert await rt.redis.ping()
            await rt.redis.set(f"{secure.mongo.db}:k", b"v", ex=60)
            assert await rt.redis.get(f"{secure.mongo.db}:k") == b"v"
        # the same server without TLS, and with TLS but without trusting its CA
        no_tls = secure.with_values(redis_tls=False, redis_tls_ca_file=None)
        untrusted = secure.with_values(redis_tls_ca_file=None)
        for settings, reason in ((no_tls, "Connection"), (untrusted, "CERTIFICATE_VERIFY")):
            async with open_runtime(settings) as rt:
                with pytest.raises(RedisConnectionError, match=reason):
                    await rt.redis.ping()


# --- MongoDB ----------------------------------------------------------------------------------


def with_mongo(stack: Endpoints, db: str, uri: str, certs: Certs, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "mongo_uri": SecretStr(uri),
        "mongo_tls": True,
        "mongo_tls_ca_file": certs.ca,
        "mongo_username": "app",
        "mongo_password": SecretStr(MONGO_PW),
        "mongo_auth_source": "admin",
    }
    return settings_for(stack, db, **{**values, **extra})


async def test_runtime_mongo_over_tls_with_scram(
    stack: Endpoints, secure_mongo: str, certs: Certs, unique: Callable[[str], str]
) -> None:
    settings = with_mongo(stack, unique("sec"), secure_mongo, certs)
    async with open_runtime(settings) as rt:  # ensures every collection and index
        db = rt.mongo[settings.mongo.db]
        assert "memory" in await db.list_collection_names()
        await db["probe"].insert_one({"_id": "x"})
        assert await db["probe"].find_one({"_id": "x"}) == {"_id": "x"}


async def test_mongo_refuses_without_credentials_tls_or_the_right_password(
    stack: Endpoints,
    secure_mongo: str,
    certs: Certs,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    db = unique("sec")
    cases: list[tuple[Settings, type[Exception], str | None]] = [
        (
            with_mongo(stack, db, secure_mongo, certs, mongo_username=None, mongo_password=None),
            OperationFailure,
            "requires authentication",
        ),
        (
            with_mongo(stack, db, secure_mongo, certs, mongo_password=SecretStr(WRONG_PW)),
            OperationFailure,
            "authentication failed",
        ),
        (
            with_mongo(stack, db, secure_mongo, certs, mongo_tls=False, mongo_tls_ca_file=None),
            ServerSelectionTimeoutError,
            None,
        ),
    ]
    for settings, error, message in cases:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            secure_mongo, serverSelectionTimeoutMS=2000, **mongo_options(settings)
        )
        try:
            with pytest.raises(error, match=message) as caught:
                await client[db]["probe"].insert_one({"_id": "x"})
        finally:
            await client.close()
        assert_no_secret(str(caught.value), repr(client), repr(settings))
    assert_no_secret(caplog.text)


def test_infra_status_masks_a_given_uri_password(secure_mongo: str, tmp_path: Path) -> None:
    """`infra up`/`status` with handed-in URLs that carry passwords print them masked."""
    runner = CliRunner()
    with_password = secure_mongo.replace("mongodb://", f"mongodb://app:{MONGO_PW}@")
    state = str(tmp_path / "state")
    args = ["--kafka", "127.0.0.1:1", "--mongo", with_password, "--redis", "redis://127.0.0.1:1"]
    up = runner.invoke(infra_app, ["up", "--state-dir", state, *args])
    assert up.exit_code == 0, up.output
    status = runner.invoke(infra_app, ["status", "--state-dir", state])
    assert "app:***@" in status.output
    assert_no_secret(up.output, status.output)


# --- Kafka ------------------------------------------------------------------------------------


async def test_kafka_sasl_refused_without_leaking_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = Settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="nobody",
        kafka_sasl_password=SecretStr(KAFKA_PW),
    )
    with tansu_with_authentication(tmp_path) as bootstrap:
        # a PLAINTEXT client is cut off before any request is answered
        with pytest.raises(KafkaConnectionError):
            await create_topics(bootstrap, {"t": 1}, retry_for=1)
        # the SASL client gets as far as the SCRAM exchange, which the broker rejects (no
        # such user); aiokafka reports that as whatever its SCRAM code trips on, not as an
        # unreachable broker
        client = MemoryClient(bootstrap, kafka_options=kafka_options(settings))
        with pytest.raises(Exception) as refused:  # aiokafka's SCRAM error type varies
            await client.start()
        await client.close()
    assert not isinstance(refused.value, KafkaConnectionError)
    assert_no_secret(caplog.text, str(refused.value), repr(refused.value), repr(client))
