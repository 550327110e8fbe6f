"""The search group's three request topics behind one consumer, and the SDK's reply topic
fetched only while a reply is awaited (issue 16: the local broker answers a waiting fetch
only when its wait ends, so the waits are short, and short waits must cost nothing idle)."""

from __future__ import annotations

import asyncio

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

SCOPE = {"agentWallet": "0xOnePoll", "userAddress": "alice", "threadId": "t1"}


def listening(client: MemoryClient) -> bool:
    consumer = client._consumer
    assert consumer is not None
    return client._replies not in consumer.paused()


async def test_pre_turn_layer_search_and_rerank_are_answered_by_one_consumer(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    async with groups_running(stack, minilm, "onepoll", ["search"]) as (_, client):
        assert not listening(client)  # idle: the reply topic is not fetched
        context = asyncio.create_task(client.context("Where do I live?", SCOPE, timeout=60))
        await asyncio.sleep(0)
        assert listening(client)  # a reply is awaited
        layers, ranked = await asyncio.gather(
            client.search_layers("Where do I live?", SCOPE, timeout=60),
            client.rerank("Which tram?", ["Bikes need oil.", "Kai rides tram 28."], timeout=60),
        )
        reply = await context
        assert reply.error is None
        assert layers.error is None
        assert ranked.error is None
        assert next(r.content for r in ranked.results) == "Kai rides tram 28."
        assert not listening(client)  # every reply came: paused again
