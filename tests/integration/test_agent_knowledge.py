"""Agent knowledge for every user of the agent, through the SDK on the real stack (issue 17
§4): a ~6,000-character document indexed for an agent without a user is found by pre_turn
for a user of that agent, and the part of its chunk that answers is packed within the
budget; another agent finds nothing.

Before the change alice's prompt was empty (her read admitted only her own rows), and with
the agent's own read the 500-character item cap showed the head of the chunk, not the gate
code."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.knowledge import chunk, chunk_ids, rows_scope
from engine.scoping import TenantFilter
from schemas import topics
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.pipeline import drained, groups_running

pytestmark = pytest.mark.integration

TOPICS = [
    "fire drills and the assembly point behind the canteen",
    "forklift charging and battery rotation",
    "returns processing and damaged goods",
    "cold storage temperatures and alarms",
    "cleaning rota for the break rooms",
    "parcel labelling and carrier cut-off times",
    "visitor badges and the reception desk",
    "pallet racking inspections every quarter",
]
GATE = (
    "Drivers arriving after dark use the north loading yard: the gate code for the north "
    "loading yard is 4471, and it is changed every spring."
)
QUERY = "What is the gate code for the north loading yard?"


def handbook() -> str:
    """About 6,000 characters of a site handbook with the gate code deep inside."""
    lines = [
        f"{n}. On {topic}, the shift lead briefs new staff during their first week and "
        f"keeps the signed checklist number {n} in the office binder."
        for n, topic in enumerate((TOPICS * 5)[:35], start=1)
    ]
    lines.insert(26, GATE)
    return "\n".join(lines)


@pytest.fixture
async def pipeline(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(
        stack, minilm, "agentknowledge", ["knowledge", "invalidation", "search"]
    ) as pair:
        yield pair


async def test_agent_knowledge_answers_any_user_of_the_agent_and_no_other_agent(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = pipeline
    agent, other = f"0xkA{uuid.uuid4().hex[:10]}", f"0xkB{uuid.uuid4().hex[:10]}"
    document = handbook()
    assert 5_500 <= len(document) <= 6_500
    # the code is in one chunk only, far past the 500 characters a head cut shows
    [holder] = [c for c in chunk(document) if "4471" in c]
    assert holder.index("4471") > 800
    event = await client.index_knowledge({"agentWallet": agent, "content": document, "key": "site"})
    await drained(
        rt.endpoints.kafka_bootstrap,
        rt.settings.group_prefix,
        [("knowledge", topics.KNOWLEDGE), ("invalidation", topics.CHANGED)],
    )
    ids = chunk_ids(rows_scope(event.scope), document, "site", None)
    assert len(ids) >= 5
    stored = await rt.memory.active_rows(TenantFilter(agent, None), sources=["knowledge"])
    assert sorted(r.vector_id for r in stored) == sorted(ids)

    alice = {"agentWallet": agent, "userAddress": "alice"}
    reply = await client.context(QUERY, alice, budget_chars=1_800)
    assert reply.prompt is not None
    assert "4471" in reply.prompt
    assert len(reply.prompt) <= 1_800
    answering = [i for i in reply.items if "4471" in i.text]
    assert answering
    assert answering[0].source == "knowledge"
    assert answering[0].id in ids
    assert len(answering[0].text) <= 500  # the default item cap still holds

    for outsider in ({"agentWallet": other}, {"agentWallet": other, "userAddress": "alice"}):
        seen = await client.context(QUERY, outsider, budget_chars=1_800)
        assert "4471" not in (seen.prompt or ""), outsider
        found = await client.search_layers(QUERY, outsider, layers=["vectors"])
        assert found.layers.get("vectors", []) == [], outsider
