"""Procedural memory and archives on the real stack: patterns emerge from tool outcomes and
become searchable, a failing sequence never validates, promotion is idempotent, the recount
job repairs counts, archives round-trip per user, are sealed at rest and pinned only
encrypted, and a sealed archive still answers a question about its content."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import bson
import numpy as np
import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo import MongoMemoryStore
from engine.adapters.mongo.archives import archive_record
from engine.errors import InputRejected
from engine.ingest.skills import promote
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.archive_seal import open_archive
from engine.upkeep.archives import decrypt_payload, read_archive
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import start_at_end, wait_processed
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.jobs import run_and_wait
from tests.support.pipeline import subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

AGENT = "0xProcedural"
DAY = 86_400_000


@pytest.fixture
async def stack_rt(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Any,
    provider: Callable[[Responder], Provider],
) -> AsyncIterator[tuple[Runtime, MemoryClient, Provider, bytes]]:
    pinata = provider(lambda r: Reply(200, {"IpfsHash": "bafy-test-cid", "PinSize": 10}))
    key = os.urandom(32)
    settings = make_settings(
        stack,
        unique("proc"),
        group_prefix=unique("proc-g"),
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        extractor="none",
        pinata_jwt="jwt-test",
        pinata_base_url=pinata.url,
        archive_encryption_key=base64.b64encode(key).decode(),
    )
    groups = ["transcripts", "patterns", "invalidation", "search", "jobs"]
    # the topics are shared by the session's tests: start at their ends (see groups_running)
    await start_at_end(stack.kafka_bootstrap, subscriptions(settings.group_prefix, groups))
    async with (
        running_groups(settings, groups, embedder=minilm, broker_logs=False) as rt,
        MemoryClient(stack.kafka_bootstrap, timeout=15) as client,
    ):
        yield rt, client, pinata, key
        await rt.mongo.drop_database(settings.mongo.db)


async def turn(
    client: MemoryClient, rt: Runtime, user: str, n: int, tools: list[str], status: str, at: int
) -> None:
    """Record trip `n` of the user with its tool events (timestamped from `at`, ms); wait until
    the patterns and transcripts groups have it."""
    await client.record_turn(
        {
            "agentWallet": AGENT,
            "userAddress": user,
            "threadId": f"trip{n}",
            "userMessage": f"Please book my trip number {n}.",
            "assistantMessage": "Booked.",
            "toolEvents": [
                {"name": t, "status": status, "timestamp": at + n * 10 + i}
                for i, t in enumerate(tools)
            ],
        }
    )
    pos = client.last_position
    assert pos is not None
    for group in ("patterns", "transcripts"):  # counted, and its transcript stored
        await wait_processed(
            rt.endpoints.kafka_bootstrap,
            rt.group_id(group),
            pos.topic,
            pos.partition,
            pos.offset,
            timeout=60,
        )


async def patterns_found(client: MemoryClient, user: str) -> str:
    deadline = time.monotonic() + 20
    while True:
        reply = await client.context(
            "How do I usually arrange travel bookings?",
            {"agentWallet": AGENT, "userAddress": user},
            layers=["patterns"],
        )
        if reply.prompt or time.monotonic() > deadline:
            return reply.prompt or ""
        await asyncio.sleep(0.2)


async def test_a_pattern_emerges_from_successful_runs_and_a_failing_one_never_validates(
    stack_rt: tuple[Runtime, MemoryClient, Provider, bytes],
    now_ms: int,
) -> None:
    rt, client, _, _ = stack_rt
    good = ["search_flights", "compare_fares", "book_ticket"]
    bad = ["search_hotels", "reserve_room"]
    for n in range(4):
        await turn(client, rt, "ana", n, good, "completed", now_ms)
        await turn(client, rt, "ana", 100 + n, bad, "failed", now_ms)
    prompt = await patterns_found(client, "ana")
    assert "search_flights -> compare_fares -> book_ticket" in prompt
    assert "reserve_room" not in prompt  # 0 % successful: never validates
    assert await patterns_found(client, "ben") == ""  # another user's procedures stay theirs

    where = TenantFilter(agent_wallet=AGENT, user_address="ana")
    [state] = [s for s in await rt.patterns.list(where, 10) if s.steps[0] == "search_flights"]
    assert state.executions == 4
    assert state.success_rate == 1.0
    first = await promote(rt.patterns, rt.skills, where, state.pattern_id, "Book travel", at=now_ms)
    again = await promote(rt.patterns, rt.skills, where, state.pattern_id, "Book travel", at=now_ms)
    assert first.status == "promoted"
    assert again.status == "already_promoted"
    db = rt.mongo[rt.settings.mongo.db]
    assert await db["skills"].count_documents({}) == 1
    [failing] = [s for s in await rt.patterns.list(where, 10) if s.steps[0] == "search_hotels"]
    refused = await promote(rt.patterns, rt.skills, where, failing.pattern_id, "Hotels", at=now_ms)
    assert refused.status == "invalid"


async def test_patterns_extract_recounts_from_transcripts(
    stack_rt: tuple[Runtime, MemoryClient, Provider, bytes],
    now_ms: int,
) -> None:
    rt, client, _, _ = stack_rt
    for n in range(3):
        await turn(client, rt, "cy", n, ["fetch_invoice", "send_email"], "completed", now_ms)
    db = rt.mongo[rt.settings.mongo.db]
    cy = {"agentWallet": AGENT, "userAddress": "cy"}  # other tests have users named cy too
    before = await db["patterns"].find_one(cy)
    assert before is not None
    assert before["executionCount"] == 3
    await db["patterns"].delete_many({})  # counts lost
    record = await run_and_wait(rt, client, "patterns_extract", agentWallet=AGENT)
    after = await db["patterns"].find_one(cy)
    assert record["status"] == "completed"
    assert after is not None
    assert after["executionCount"] == 3  # rebuilt exactly, once per turn
    assert after["successRate"] == 1.0


def row(agent: str, vid: str, user: str, content: str, age_days: float, now: int) -> MemoryRow:
    """A fact of `agent` said `age_days` before `now` (ms)."""
    vec = np.ones(384, dtype=np.float32) / np.sqrt(384)
    return MemoryRow(
        vid,
        ScopeFields(agent, user, None, None, None),
        content,
        vec,
        "all-MiniLM-L6-v2-int8",
        "fact",
        int(now - age_days * DAY),
        {},
    )


async def test_archives_round_trip_per_user_and_are_pinned_only_encrypted(
    stack_rt: tuple[Runtime, MemoryClient, Provider, bytes],
    now_ms: int,
    unique: Callable[[str], str],
) -> None:
    rt, client, pinata, key = stack_rt
    # its own agent: consumer groups of every test read the shared turn topic from the start,
    # so another test's turns must not land in this archive's window
    agent = unique("0xArchives")
    store = MongoMemoryStore(rt.mongo[rt.settings.mongo.db])
    mine = [
        row(
            agent,
            f"ana-{i}",
            "ana",
            f"Ana renovated the kitchen cabinets, step {i}.",
            1 + i,
            now_ms,
        )
        for i in range(3)
    ]
    theirs = [row(agent, "ben-0", "ben", "Ben adopted a parrot called Kiwi.", 2, now_ms)]
    for r in [*mine, *theirs, row(agent, "old", "ana", "Too old for this archive.", 30, now_ms)]:
        await store.insert_if_absent(r)
    record = await run_and_wait(rt, client, "archive_create", agentWallet=agent, windowDays=7)
    assert record["status"] == "completed", record
    assert len(record["result"]["archives"]) == 2  # one per user, none empty
    assert record["result"]["pinned"] == 2
    docs = {
        d["userAddress"]: d
        for d in await rt.mongo[rt.settings.mongo.db]["archives"].find({}).to_list(length=None)
    }
    for doc in docs.values():  # sealed at rest: nothing of the rows is readable in MongoDB
        assert b"kitchen" not in bson.encode(doc)
        assert b"Kiwi" not in bson.encode(doc)
    opened = {user: open_archive(archive_record(d), rt.archive_keys) for user, d in docs.items()}
    assert opened["ana"].content is not None
    ana = read_archive(opened["ana"].content)
    assert sorted(e["vectorId"] for e in ana["entries"]) == ["ana-0", "ana-1", "ana-2"]
    assert [e["content"] for e in ana["entries"] if e["vectorId"] == "ana-1"] == [mine[1].content]
    assert "Kiwi" not in json.dumps(ana)  # never another user's rows
    assert docs["ana"]["ipfsCid"] == "bafy-test-cid"
    assert docs["ana"]["metadata"]["entryCount"] == 3
    assert "kitchen" in opened["ana"].topics

    pinned: list[Received] = pinata.received
    assert len(pinned) == 2
    for request in pinned:
        body = request.body.decode()
        assert "kitchen" not in body  # no plaintext left the service
        assert "Kiwi" not in body
        assert request.headers["authorization"] == "Bearer jwt-test"
    content = pinned[0].json()["pinataContent"]
    blob = base64.b64decode(content["payload"])
    plain = decrypt_payload(blob, key, archive_id=content["archiveId"])
    assert read_archive(plain.decode())["archiveId"] == content["archiveId"]
    with pytest.raises(InputRejected):
        decrypt_payload(blob, os.urandom(32), archive_id=content["archiveId"])


async def test_a_sealed_archive_answers_a_question_about_its_content_through_the_sdk(
    stack_rt: tuple[Runtime, MemoryClient, Provider, bytes],
    now_ms: int,
    unique: Callable[[str], str],
) -> None:
    """Issue 17 §3: with the archive key set the job stores the archive sealed, and the
    search group (which opens it) still finds it for a question about what it holds."""
    rt, client, _, _ = stack_rt
    agent = unique("0xSealed")
    store = MongoMemoryStore(rt.mongo[rt.settings.mongo.db])
    said = [
        "The user's storage unit code is swordfish-42.",
        "The user keeps winter tyres in the storage unit.",
    ]
    for i, text in enumerate(said):
        await store.insert_if_absent(row(agent, f"unit-{i}", "ana", text, 1 + i, now_ms))
    job = await run_and_wait(rt, client, "archive_create", agentWallet=agent, windowDays=7)
    assert job["status"] == "completed", job
    [archive_id] = job["result"]["archives"]
    doc = await rt.mongo[rt.settings.mongo.db]["archives"].find_one({"_id": archive_id})
    assert doc is not None
    assert b"swordfish" not in bson.encode(doc)  # sealed at rest (the check of the contract
    assert b"storage" not in bson.encode(doc)  # suite, tests/contract/test_archive_stores.py)

    reply = await client.context(
        "What is the code of my storage unit?",
        {"agentWallet": agent, "userAddress": "ana"},
        layers=["archives"],
    )

    assert reply.error is None
    prompt = reply.prompt or ""
    assert "[ARCHIVES " in prompt
    assert "swordfish-42" in prompt  # opened by the search group, found by its content
    other = await client.context(
        "What is the code of my storage unit?",
        {"agentWallet": agent, "userAddress": "ben"},
        layers=["archives"],
    )
    assert "swordfish" not in (other.prompt or "")  # another user's archive stays theirs
