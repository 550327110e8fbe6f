"""Scenario (issue 32): a graph that generalises, on the real stack through the SDK with the
offline rule extractor. No rule knows "employed by" or "head office"; the links
(`engine.ingest.extraction.links`) join the user to Initech and Initech to Austin, each with
its sentence, and the extraction group's relation typer (`engine.ingest.extraction.
relation_typer`) types them by the words between their ends (WORKS_AT, BASED_IN); the graph
layer follows them from "my company" to the Austin sentence."""

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
    ("facts", topics.FACTS),
    ("embeddings", topics.EMBEDDINGS),
    ("invalidation", topics.CHANGED),
]

EMPLOYED = "These days I'm employed by Initech as an analyst."
OFFICE = "Initech's head office sits in Austin, Texas."


async def test_my_company_reaches_the_head_office_sentence_through_typed_links(
    rules_pipeline: tuple[Runtime, MemoryClient], now: datetime
) -> None:
    rt, client = rules_pipeline
    scope = {"agentWallet": "0xLinks", "userAddress": "ana"}
    for i, text in enumerate([EMPLOYED, OFFICE]):
        await client.record_turn(
            {
                **scope,
                "threadId": f"t{i}",
                "occurredAt": (now - timedelta(days=5 - i)).isoformat(),
                "userMessage": text,
                "assistantMessage": "Noted.",
            }
        )
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, STAGES)

    db = rt.mongo[rt.settings.mongo.db]
    links = {
        (r["sourceName"], r["type"], r["targetName"]): r["metadata"].get("evidence")
        async for r in db["relations"].find(scope)
    }
    # typed by the words that join their ends, not by a rule (stop 43's relation typer)
    assert links[("user", "WORKS_AT", "Initech")] == EMPLOYED
    assert links[("Initech", "BASED_IN", "Austin")] == OFFICE
    assert ("user", "MENTIONS", "Initech") not in links  # typed, not also linked untyped

    ask = {**scope, "threadId": "new"}
    reply = await client.context("Which city is my company located in?", ask, layers=["graph"])
    assert reply.prompt is not None
    assert OFFICE in reply.prompt
    assert EMPLOYED in reply.prompt  # the step from the user to the company
