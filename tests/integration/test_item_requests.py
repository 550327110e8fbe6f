"""Item lifecycle over Kafka (request-reply): every operation stays inside the caller's
scope (outside it the item is "not found"), and every change reaches pre_turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.remember import fact_hash
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import wait_processed
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

AGENT = "0xItems"


@pytest.fixture
async def items(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(
        stack, minilm, "items", ["facts", "items", "invalidation", "search"]
    ) as pair:
        yield pair


async def remembered(rt: Runtime, client: MemoryClient, user: str, text: str) -> str:
    await client.remember({"agentWallet": AGENT, "userAddress": user, "content": text})
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        rt.endpoints.kafka_bootstrap,
        rt.group_id("facts.remember"),
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )
    return "fact_" + fact_hash(AGENT, user, text)


async def recall(client: MemoryClient, user: str, query: str, want: str | None) -> str:
    deadline = time.monotonic() + 20
    while True:
        reply = await client.context(
            query, {"agentWallet": AGENT, "userAddress": user}, layers=["graph"]
        )
        prompt = reply.prompt or ""
        if (want in prompt if want else not prompt) or time.monotonic() > deadline:
            return prompt
        await asyncio.sleep(0.2)


async def test_item_operations_outside_the_callers_scope_return_not_found(
    items: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = items
    item = await remembered(rt, client, "uma", "Uma's locker number is 42.")
    mine = {"agentWallet": AGENT, "userAddress": "uma"}
    assert (await client.item("get", item, mine)).items[0][
        "content"
    ] == "Uma's locker number is 42."
    for outsider in (
        {"agentWallet": AGENT, "userAddress": "vic"},
        {"agentWallet": AGENT},  # no user: agent-level rows only
        {"agentWallet": "0xOther", "userAddress": "uma"},
    ):
        for op, fields in (
            ("get", {}),
            ("update", {"content": "hacked"}),
            ("delete", {}),
            ("resolve", {"resolution": "keep"}),
        ):
            reply = await client.item(op, item, outsider, **fields)
            assert reply.not_found, (op, outsider)
    assert (await client.item("get", item, mine)).items[0][
        "content"
    ] == "Uma's locker number is 42."


async def test_update_re_embeds_and_delete_hides_and_every_change_reaches_pre_turn(
    items: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = items
    item = await remembered(rt, client, "wes", "Wes drives a blue bicycle to work.")
    scope = {"agentWallet": AGENT, "userAddress": "wes"}
    assert "blue bicycle" in await recall(client, "wes", "How does Wes get to work?", "blue")
    updated = await client.item("update", item, scope, content="Wes drives a red scooter to work.")
    assert updated.items[0]["content"] == "Wes drives a red scooter to work."
    assert updated.items[0]["embeddingModel"] == "all-MiniLM-L6-v2-int8"
    assert "red scooter" in await recall(client, "wes", "How does Wes get to work?", "scooter")
    bad = await client.item("update", item, scope, status="exploded")
    assert bad.error is not None
    assert not bad.not_found
    deleted = await client.item("delete", item, scope)
    assert deleted.items[0]["status"] == "deleted"
    assert await recall(client, "wes", "How does Wes get to work?", None) == ""
    assert (await client.item("get", item, scope)).not_found


async def test_an_expired_update_request_is_not_applied(
    items: tuple[Runtime, MemoryClient],
) -> None:
    """A request whose client stopped waiting is not served: a new group reading the request
    topic from the beginning must not apply old commands again."""
    from schemas import topics
    from schemas.requests import ItemRequest
    from schemas.scope import Scope

    rt, client = items
    user = f"wes{time.time_ns()}"
    item = await remembered(rt, client, user, "Wes parks on level 3.")
    scope = {"agentWallet": AGENT, "userAddress": user}
    stale = ItemRequest(scope=Scope.parse(scope), op="update", id=item, content="Level 9.")
    await client.publish(
        topics.ITEMS,
        stale,
        AGENT,  # the key of every item request of this agent: same partition, served in order
        reply_to=client.reply_topic,
        correlation_id="stale-request",
        deadline=int(time.time() * 1000) - 1,
    )
    reply = await client.item("get", item, scope)
    assert reply.items[0]["content"] == "Wes parks on level 3."
