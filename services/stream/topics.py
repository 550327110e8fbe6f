"""Topic creation: explicit partition counts, created before anything produces or subscribes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from services.stream.security import NO_OPTIONS

__all__ = ["create_topics"]

log = logging.getLogger(__name__)


async def create_topics(
    bootstrap: str,
    partitions: dict[str, int],
    *,
    retry_for: float = 30.0,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
    retention_ms: Callable[[str], int] | None = None,
) -> None:
    """Create topics with explicit partition counts (replication factor 1). `kafka_options`:
    aiokafka security arguments (`services.stream.security.kafka_options`). `retention_ms`:
    each new topic's `retention.ms` (-1 keeps every record; `KafkaSettings.retention_ms`);
    None leaves it to the broker's default.

    Topics that already exist are left alone (a warning is logged when their partition count
    differs). Retries for up to ``retry_for`` seconds while the broker is not reachable yet.
    Tansu auto-creates unknown topics with 4 partitions, so create every topic before anything
    produces to or subscribes to it.
    """
    if not partitions:
        return
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import KafkaConnectionError, KafkaError, TopicAlreadyExistsError, for_code

    deadline = time.monotonic() + retry_for
    while True:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap, client_id="mnemostream-infra", **kafka_options
        )
        try:
            await admin.start()
            response = await admin.create_topics(
                [
                    NewTopic(
                        name,
                        num_partitions=n,
                        replication_factor=1,
                        topic_configs=(
                            {}
                            if retention_ms is None
                            else {"retention.ms": str(retention_ms(name))}
                        ),
                    )
                    for name, n in partitions.items()
                ]
            )
            existing: list[str] = []
            for topic, code, message in response.topic_errors:
                if not code:
                    continue
                error = for_code(code)
                if error is TopicAlreadyExistsError:
                    existing.append(str(topic))
                    continue
                raise error(f"cannot create topic {topic!r}: {message}")
            if existing:
                await _warn_partition_mismatch(admin, existing, partitions)
            return
        except (KafkaConnectionError, OSError, TimeoutError):
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)
        except KafkaError as exc:
            if not getattr(exc, "retriable", False) or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)
        finally:
            with contextlib.suppress(KafkaError, OSError):
                await admin.close()


async def _warn_partition_mismatch(admin: Any, topics: list[str], wanted: dict[str, int]) -> None:
    described = cast(list[dict[str, Any]], await admin.describe_topics(topics))
    for topic in described:
        name, have = str(topic["topic"]), len(topic["partitions"])
        if have != wanted[name]:
            log.warning(
                "topic %s already exists with %d partitions, not %d", name, have, wanted[name]
            )
