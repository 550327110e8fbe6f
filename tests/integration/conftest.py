"""Fixtures shared by the integration scenarios."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import start_at_end
from tests.support.pipeline import subscriptions
from tests.support.settings import make_settings


@pytest.fixture
async def rules_pipeline(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    """Every group of one runtime with the rule-based extractor, and an SDK client."""
    settings = make_settings(
        stack,
        unique("rules"),
        group_prefix=unique("rules-g"),
        extractor="rules",
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
    )
    # the topics are shared by the session's tests: start at their ends (see groups_running)
    await start_at_end(stack.kafka_bootstrap, subscriptions(settings.group_prefix, ["all"]))
    async with (
        running_groups(settings, ["all"], embedder=minilm, broker_logs=False) as rt,
        MemoryClient(
            stack.kafka_bootstrap,
            timeout=15,
            group_prefix=settings.group_prefix,
            deferred_embeddings=settings.embedding.deferred,
        ) as client,
    ):
        yield rt, client
        await rt.mongo.drop_database(settings.mongo.db)
