"""Scenario (issue 32): remembered texts get the graph's untyped links, and forgetting a fact
forgets them, on the real stack through the SDK with the offline rule extractor.

"These days I'm employed by Initech as an analyst." and "Initech's head office sits in
Austin, Texas." remembered: "Which city is my company located in?" reaches Austin through the
graph layer. Forgetting the head-office fact (soft, as the MCP `forget` does) leaves none of its
words in any graph collection (the entity rows of `memory`, `relations`, and the graph rows'
`memory_history`); purging both facts leaves none of either anywhere in the tenant's records,
whatever the collection."""

from __future__ import annotations

from typing import Any

import pytest

from engine.ingest.remember import fact_hash
from schemas import topics
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.pipeline import drained

pytestmark = pytest.mark.integration

STAGES = [
    ("facts.remember", topics.REMEMBER),
    ("embeddings", topics.EMBEDDINGS),
    ("invalidation", topics.CHANGED),
]
CHANGED = [("invalidation", topics.CHANGED)]

EMPLOYED = "These days I'm employed by Initech as an analyst."
OFFICE = "Initech's head office sits in Austin, Texas."
QUESTION = "Which city is my company located in?"
AGENT, USER = "0xRemLinks", "ana"


async def graph_words(rt: Runtime) -> str:
    """Every graph row of the tenant (entity rows, relations) and their item history."""
    db = rt.mongo[rt.settings.mongo.db]
    tenant = {"agentWallet": AGENT, "userAddress": USER}
    found: list[Any] = []
    found += await db["memory"].find({**tenant, "source": "entity"}).to_list(None)
    found += await db["relations"].find(tenant).to_list(None)
    found += (
        await db["memory_history"].find({**tenant, "itemId": {"$regex": "^ent_"}}).to_list(None)
    )
    return "\n".join(str(d) for d in found)


async def tenant_words(rt: Runtime) -> str:
    """Every document of the tenant in every collection of the database."""
    db = rt.mongo[rt.settings.mongo.db]
    out: list[str] = []
    for name in await db.list_collection_names():
        docs = await db[name].find({"agentWallet": AGENT, "userAddress": USER}).to_list(None)
        out += [str(d) for d in docs]
    return "\n".join(out)


async def test_remembered_links_reach_austin_and_go_with_their_fact(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = rules_pipeline
    scope = {"agentWallet": AGENT, "userAddress": USER}
    for text in (EMPLOYED, OFFICE):
        await client.remember({**scope, "content": text})
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, STAGES)

    ask = {**scope, "threadId": "q"}
    reply = await client.context(QUESTION, ask, layers=["graph"])
    assert reply.prompt is not None
    assert "Austin" in reply.prompt
    assert "head office" in await graph_words(rt)

    office = "fact_" + fact_hash(AGENT, USER, OFFICE)
    employed = "fact_" + fact_hash(AGENT, USER, EMPLOYED)
    forgot = await client.item("delete", office, scope)
    assert forgot.error is None, forgot
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, CHANGED)
    words = await graph_words(rt)
    for said in ("head office", "Austin", "Texas"):
        assert said not in words
    assert EMPLOYED in words  # the other fact's links stay
    after = await client.context(QUESTION, {**scope, "threadId": "q2"}, layers=["graph"])
    assert "Austin" not in (after.prompt or "")

    for fact in (office, employed):
        purged = await client.item("delete", fact, scope, hard=True)
        assert purged.error is None, purged
    everything = await tenant_words(rt)
    for said in ("head office", "Austin", "employed by", "Initech", "analyst"):
        assert said not in everything
