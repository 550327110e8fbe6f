"""Scenario (issue 17 §1): a graph of everyone, as a user builds it through the SDK on the
real stack with the offline rule extractor: third parties are entities, relations join any
two of them, from turns and from `remember`, hydration follows a chain that starts at the
user, and one entity appears once per context."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from schemas import topics
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.pipeline import drained

pytestmark = pytest.mark.integration

STAGES = [
    ("extraction", topics.TURNS),
    ("facts.remember", topics.REMEMBER),
    ("facts", topics.FACTS),
    ("embeddings", topics.EMBEDDINGS),
    ("invalidation", topics.CHANGED),
]
"""Every turn extracted, every remember and extraction stored, their vectors filled and
their changes applied: the turns and remembers go to several partitions, so waiting for
one answer would prove nothing about the others."""


async def test_a_graph_of_third_parties_with_chained_hydration(
    rules_pipeline: tuple[Runtime, MemoryClient], now: datetime
) -> None:
    rt, client = rules_pipeline
    scope = {"agentWallet": "0xGraph", "userAddress": "sam"}
    said = [
        "I work at Acme Corp, it's been two years now.",
        "My sister Maria lives in Madrid.",
    ]
    for i, text in enumerate(said):
        await client.record_turn(
            {
                **scope,
                "threadId": f"t{i}",
                "occurredAt": (now - timedelta(days=10 - i)).isoformat(),
                "userMessage": text,
                "assistantMessage": "Good to know.",
            }
        )
    for text in ("Acme Corp is based in Berlin.", "My manager is Dana."):
        await client.remember({**scope, "content": text})
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, STAGES)

    # relations between any two entities, from turns and from remember
    db = rt.mongo[rt.settings.mongo.db]
    links = {
        (r["sourceName"], r["type"], r["targetName"])
        async for r in db["relations"].find({"agentWallet": "0xGraph", "userAddress": "sam"})
    }
    assert {
        ("user", "WORKS_AT", "Acme Corp"),
        ("Acme Corp", "BASED_IN", "Berlin"),  # remembered, not said in a turn
        ("Dana", "MANAGER_OF", "user"),  # remembered
        ("Maria", "SISTER_OF", "user"),
        ("Maria", "LIVES_IN", "Madrid"),  # a third party's own link
    } <= links

    ask = {**scope, "threadId": "new"}
    employer = await client.context("Where is my employer based?", ask, layers=["graph"])
    assert employer.prompt is not None
    # no single row says where the user's employer is: the chain user → Acme → Berlin does
    assert "Acme Corp BASED_IN Berlin" in employer.prompt
    assert "works at Acme Corp" in employer.prompt

    manager = await client.context("Who is my manager?", ask, layers=["graph"])
    assert manager.prompt is not None
    assert "Dana" in manager.prompt

    sister = await client.context("Where does my sister Maria live?", ask, layers=["graph"])
    assert sister.prompt is not None
    assert "Madrid" in sister.prompt

    # one entity once per context, whichever layers found it
    everything = await client.context("Tell me about Acme Corp", ask, budget_chars=4000)
    assert everything.prompt is not None
    assert everything.prompt.count("Acme Corp (organisation)") == 1
