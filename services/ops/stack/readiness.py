"""Readiness probes: whether a server answers a real request of its protocol.

Each probe takes an endpoint and a timeout in seconds and returns True only after a reply:
Kafka names at least one broker in its metadata, MongoDB answers ``ping``, Redis ``PING``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from pymongo import MongoClient
from pymongo.errors import PyMongoError
from redis import Redis, RedisError

from services.endpoints import ServiceName
from services.ops.stack.servers import HOST

__all__ = ["PROBES", "kafka_ready", "mongo_ready", "redis_ready"]

_T = TypeVar("_T")


def _run_async(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine from sync code, also when called inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _host_port(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    return (host.strip("[]") or HOST), int(port or 9092)


def _tcp_open(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


async def _kafka_metadata(bootstrap: str, limit: float) -> bool:
    from aiokafka import AIOKafkaClient
    from aiokafka.errors import KafkaError

    client = AIOKafkaClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=max(int(limit * 1000), 1000),
        client_id="mnemostream-infra-probe",
    )
    try:
        async with asyncio.timeout(limit):
            await client.bootstrap()
        return bool(client.cluster.brokers())
    except (KafkaError, OSError, TimeoutError):
        return False
    finally:
        with contextlib.suppress(KafkaError, OSError):
            await client.close()


def kafka_ready(bootstrap: str, timeout: float = 2.0) -> bool:
    """TCP connect, then a real metadata request that must name at least one broker."""
    try:
        host, port = _host_port(bootstrap)
    except ValueError:
        return False
    if not _tcp_open(host, port, timeout):
        return False
    return _run_async(lambda: _kafka_metadata(bootstrap, timeout))


def mongo_ready(uri: str, timeout: float = 2.0) -> bool:
    """A ``ping`` command that answers ``ok``."""
    ms = max(int(timeout * 1000), 200)
    client: MongoClient[dict[str, Any]] = MongoClient(
        uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms, socketTimeoutMS=ms, connect=False
    )
    try:
        reply = client.admin.command("ping")
        return bool(reply.get("ok"))
    except PyMongoError:
        return False
    finally:
        client.close()


def redis_ready(url: str, timeout: float = 2.0) -> bool:
    """A ``PING`` that answers."""
    client = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (RedisError, OSError):
        return False
    finally:
        client.close()


PROBES: Final[dict[ServiceName, Callable[[str, float], bool]]] = {
    "kafka": kafka_ready,
    "mongo": mongo_ready,
    "redis": redis_ready,
}
