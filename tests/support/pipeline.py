"""Consumer groups running in-process on the session's real stack, with a client, for one
test: a fresh database and fresh group ids, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.groups.app import resolve_groups, running_groups
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.asyncapi import CHANNELS
from services.stream.offsets import end_offsets, start_at_end, wait_caught_up
from services.stream.security import NO_OPTIONS
from tests.support.settings import make_settings


def subscriptions(group_prefix: str, groups: Sequence[str]) -> list[tuple[str, str]]:
    """(Kafka group id, topic) of every subscriber of the named groups."""
    chosen = resolve_groups(groups)
    return [
        (f"{group_prefix}.{consumer}", channel.topic)
        for channel in CHANNELS
        for consumer in channel.consumers
        if consumer.split(".")[0] in chosen
    ]


async def drained(
    bootstrap: str,
    group_prefix: str,
    stages: Sequence[tuple[str, str]],
    *,
    timeout: float = 60,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> None:
    """Wait until each (group, topic) of `stages`, in order, has processed everything
    published on its topic so far (group ids are `<group_prefix>.<group>`). A stage's ends are
    read once the stage before it is done, so they include what that stage published:
    `[("extraction", TURNS), ("facts", FACTS)]` waits for every turn's facts, whatever
    partitions the turns and the facts went to.

    Waiting for one expected answer instead proves only that its own event was handled: an
    event on another partition (another thread's turn) or another topic (the cache
    invalidation a write announces) may still be on its way."""
    for group, topic in stages:
        ends = await end_offsets(bootstrap, [topic], kafka_options=kafka_options)
        await wait_caught_up(
            bootstrap,
            f"{group_prefix}.{group}",
            ends,
            timeout=timeout,
            kafka_options=kafka_options,
        )


@asynccontextmanager
async def groups_running(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder | None,
    name: str,
    groups: Sequence[str],
    *,
    from_start: bool = False,
    tracer_provider: TracerProvider | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    """`groups` of a deployment named `name` (fast group joins, no extractor unless set);
    `minilm=None` builds the embedder the settings name; spans go to `tracer_provider` when
    given. The client publishes turns through the ingress when the settings say so.

    The topics are shared by every test of the session, so the groups start at the topics'
    current ends and see only what the test publishes; `from_start=True` makes them read
    everything from the beginning, as a new deployment's groups do."""
    tag = uuid.uuid4().hex[:10]
    config = make_settings(
        stack,
        f"{name}_{tag}",
        **{
            "group_prefix": f"{name}-{tag}",
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
            "extractor": "none",
            # vectors are filled by the embeddings group when the test runs it; otherwise
            # the writers embed before they write, as a deployment without it must
            "embedding_deferred": "embeddings" in groups,
            **settings,
        },
    )
    if not from_start:
        await start_at_end(stack.kafka_bootstrap, subscriptions(config.group_prefix, groups))
    async with (
        running_groups(
            config, groups, embedder=minilm, broker_logs=False, tracer_provider=tracer_provider
        ) as rt,
        MemoryClient(
            stack.kafka_bootstrap,
            timeout=15,
            group_prefix=config.group_prefix,
            deferred_embeddings=config.embedding.deferred,
            ingress=config.sealing.ingress,
        ) as client,
    ):
        try:
            yield rt, client
        finally:
            await rt.mongo.drop_database(config.mongo.db)
