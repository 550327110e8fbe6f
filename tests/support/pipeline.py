"""Consumer groups running in-process on the session's real stack, with a client, for one
test: a fresh database and fresh group ids, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.app import running_groups
from services.client import MemoryClient
from services.infra import Endpoints
from services.runtime import Runtime
from tests.support.settings import make_settings


@asynccontextmanager
async def groups_running(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    name: str,
    groups: Sequence[str],
    **settings: Any,
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    """`groups` of a deployment named `name` (fast group joins, no extractor unless set)."""
    tag = uuid.uuid4().hex[:10]
    config = make_settings(
        stack,
        f"{name}_{tag}",
        **{
            "group_prefix": f"{name}-{tag}",
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
            "extractor": "none",
            **settings,
        },
    )
    async with (
        running_groups(config, groups, embedder=minilm, broker_logs=False) as rt,
        MemoryClient(stack.kafka_bootstrap, timeout=15) as client,
    ):
        yield rt, client
        await rt.mongo.drop_database(config.mongo_db)
