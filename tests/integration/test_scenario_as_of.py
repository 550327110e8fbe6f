"""Scenario (issue 17 §2): `asOf` in every layer, and superseded memory never shown as
current, as a user exercises them through the SDK on the real stack (rule extractor)."""

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
    ("transcripts", topics.TURNS),
    ("patterns", topics.TURNS),
    ("facts", topics.FACTS),
    ("embeddings", topics.EMBEDDINGS),
    ("jobs", topics.JOBS),
    ("invalidation", topics.CHANGED),
]
"""Every turn stored, extracted and counted, every fact and vector stored, every job run
and every change applied (turns of several threads are on several partitions)."""

ALL_LAYERS = ["working", "scene", "graph", "patterns", "archives", "vectors"]


async def test_as_of_holds_in_every_layer_and_a_replaced_turn_is_marked(
    rules_pipeline: tuple[Runtime, MemoryClient], now: datetime
) -> None:
    rt, client = rules_pipeline
    scope = {"agentWallet": "0xAsOf", "userAddress": "rui"}
    lived, moved = now - timedelta(days=60), now - timedelta(days=3)
    before_move = moved - timedelta(days=1)
    await client.record_turn(
        {
            **scope,
            "threadId": "home",
            "occurredAt": lived.isoformat(),
            "userMessage": "I live in Lisbon, near the river.",
            "assistantMessage": "Lovely city.",
        }
    )
    await client.record_turn(
        {
            **scope,
            "threadId": "home",
            "occurredAt": moved.isoformat(),
            "userMessage": "Big news: I moved to Porto last weekend.",
            "assistantMessage": "Congratulations on the move to Porto!",
        }
    )
    for n in range(3):  # a flight-booking procedure, learnt now (after `before_move`)
        await client.record_turn(
            {
                **scope,
                "threadId": f"trip{n}",
                "userMessage": f"Book flights for trip {n}, please.",
                "assistantMessage": "Flights booked.",
                "toolEvents": [
                    {"name": tool, "status": "success"}
                    for tool in ("search_flights", "book_flight", "send_confirmation")
                ],
            }
        )
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, STAGES)
    # an archive of both homes: it holds the move, so it must not answer about the past (an
    # archive is as old as its newest entry, the end of its range)
    span = {
        "start": int((lived - timedelta(days=1)).timestamp() * 1000),
        "end": int((moved + timedelta(days=1)).timestamp() * 1000),
    }
    await client.request_job(
        "archive_create",
        {"agentWallet": "0xAsOf", "dateRange": span, "syncToIpfs": False},
    )
    await drained(rt.endpoints.kafka_bootstrap, rt.settings.group_prefix, STAGES)
    db = rt.mongo[rt.settings.mongo.db]
    assert await db["archives"].count_documents({"agentWallet": "0xAsOf"}) >= 1
    assert await db["patterns"].count_documents({"agentWallet": "0xAsOf"}) >= 1

    past = before_move.isoformat()
    here = {**scope, "threadId": "home"}
    for question in ("Which city do I live in?", "How do I book flights?"):
        reply = await client.context(
            question, here, layers=ALL_LAYERS, as_of=past, budget_chars=4000
        )
        prompt = reply.prompt or ""
        assert "Porto" not in prompt, question  # scene, working, graph, vectors: not yet said
        assert "[ARCHIVES" not in prompt, question  # made after `as_of`
        assert "[PATTERNS" not in prompt, question  # learnt after `as_of`
    then = await client.context("Which city do I live in?", here, layers=ALL_LAYERS, as_of=past)
    assert "Lisbon" in (then.prompt or "")

    current = await client.context(
        "Which city do I live in?", {**scope, "threadId": "elsewhere"}, budget_chars=4000
    )
    prompt = current.prompt or ""
    assert "Porto" in prompt
    said = [block for block in prompt.split("\n\n") if "I live in Lisbon" in block]
    assert said  # the old turn is still found by a question about the city
    for block in said:
        # ... but shown as outdated, never as current beside its replacement
        assert "(until " in block, block
    assert "lives in Lisbon" not in prompt
