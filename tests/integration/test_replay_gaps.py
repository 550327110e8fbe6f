"""What a replay can and cannot rebuild, on the real stack (issue 31).

* The local broker reports a partition's end as its last record batch's first offset plus
  one: a replay bounded by it stopped short of a batch of turns published together (and
  `end_offsets`, which reads the end from the records, is exact).
* A database holding rows written before the log's first record (written to MongoDB
  directly, as a restored backup or a lost head would leave them) is reported, for the live
  database and for a target that was not dropped, and `replay --verify` says not verifiable.
  A database the log rebuilt is reported whole."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from pymongo import AsyncMongoClient

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from schemas.bodies import parse_body
from schemas.turn_input import TurnInput
from services.endpoints import Endpoints
from services.ops.log_gaps import database_gaps, oldest_stamp, when
from services.ops.log_reach import log_reach
from services.ops.replay import SOURCE_TOPICS, Progress, replay
from services.ops.replay_view import run_replay
from services.stream.offsets import end_offsets, wait_caught_up
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000
BATCH = 25


def turn(agent: str, n: int, thread: str = "t0") -> TurnInput:
    return parse_body(
        TurnInput,
        {
            "agentWallet": agent,
            "userAddress": "alice",
            "threadId": thread,
            "turnId": f"turn-{n}",
            "userMessage": f"Message {n}: the train to Porto leaves at {n % 24}:00.",
            "assistantMessage": f"Noted {n}.",
        },
    )


async def test_replay_reads_past_the_end_the_broker_reports_for_a_batch(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str]
) -> None:
    agent = f"0xbatch{uuid.uuid4().hex[:10]}"
    rebuilt = unique("batch")
    events = [turn(agent, n).recorded() for n in range(BATCH)]
    # one thread, one key, one partition; sent together, the records travel in one batch
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap, linger_ms=200)
    await producer.start()
    try:
        sent = [
            await producer.send(
                topics.TURNS,
                e.model_dump_json().encode(),
                key=e.session_id.encode(),
                headers=[("content-type", b"application/json")],
            )
            for e in events
        ]
        metas = [await s for s in sent]
    finally:
        await producer.stop()
    partition = (topics.TURNS, metas[-1].partition)
    last = max(m.offset for m in metas)
    reported = (await end_offsets(stack.kafka_bootstrap, [topics.TURNS]))[partition]
    # end_offsets reads the end from the records (the broker's own answer is the batch's
    # first offset plus one): a group started there, or a bound taken there, is past it
    assert reported == last + 1
    seen: list[Progress] = []
    async with groups_running(stack, minilm, "batchends", []) as (rt, _):
        try:
            report = await replay(
                rt.settings, rebuilt, fresh=True, agents=[agent], on_progress=seen.append
            )
            ends = {(p.topic, p.partition): p.end for p in seen[-1].positions}
            # the replay's bound is past the batch's last record, wherever the broker said
            assert ends[partition] >= last + 1, (ends[partition], reported, last)
            stored = rt.mongo[rebuilt]["transcript_turns"]
            assert await stored.count_documents({"agentWallet": agent}) == BATCH
            assert report.records >= BATCH
            assert report.gaps == ()
        finally:
            await rt.mongo.drop_database(rebuilt)


async def test_rows_older_than_the_log_are_reported_and_not_verifiable(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    now_ms: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = f"0xgaps{uuid.uuid4().hex[:10]}"
    rebuilt, seeded = unique("gaps"), unique("seeded")
    async with groups_running(stack, minilm, "gaps", ["transcripts"], only_agents=[agent]) as (
        rt,
        client,
    ):
        settings = rt.settings
        live = rt.mongo[settings.mongo.db]["memory"]
        ends: dict[tuple[str, int], int] = {}
        for n in range(3):
            await client.record_turn(turn(agent, n, thread=f"t{n}"))
            pos = client.last_position
            assert pos is not None
            ends[(pos.topic, pos.partition)] = max(
                ends.get((pos.topic, pos.partition), 0), pos.offset + 1
            )
        await wait_caught_up(stack.kafka_bootstrap, rt.group_id("transcripts"), ends)
        assert await live.count_documents({"agentWallet": agent, "source": "session"}) == 3
        try:
            # the live rows were written from records the log holds: whole (the check a
            # replay runs, called alone: every replay reads the session's whole topics,
            # minutes in the full suite, so this test replays once, below)
            reach = await log_reach(stack.kafka_bootstrap, SOURCE_TOPICS)
            assert await database_gaps(settings, settings.mongo.db, reach, [agent]) == []

            # a turn row written a day before anything on the topic (the broker of this
            # test session started less than a day ago)
            old = now_ms - DAY_MS
            await live.insert_one(
                {
                    "_id": f"restored-{agent}",
                    "agentWallet": agent,
                    "userAddress": "alice",
                    "source": "session",
                    "content": "restored from an old backup",
                    "createdAt": old,
                    "changedAt": old,
                }
            )
            [line] = await database_gaps(settings, settings.mongo.db, reach, [agent])
            assert line.startswith(
                f"memory.turns.v1 and memory.workflows.v1 cannot be rebuilt: database "
                f"{settings.mongo.db} holds events from {when(old)} (session rows), "
                "the log starts at "
            )
            start = line.rsplit(" ", 1)[-1]
            assert when(old) < start <= when(now_ms + 60_000)

            # `replay --verify` does not call the rebuild equal
            ok = await asyncio.to_thread(
                run_replay, settings, rebuilt, fresh=True, agents=[agent], verify=True
            )
            out = " ".join(capsys.readouterr().out.split())  # the console wraps at 80
            assert ok is False
            assert "older than the log: memory.turns.v1 and memory.workflows.v1 cannot" in out
            assert out.endswith(
                "not verifiable: the log no longer holds all of memory (0 source partitions "
                "truncated, 1 kinds of rows older than the log)"
            )

            # a target pre-seeded with an old knowledge row, not dropped by the replay
            await live.delete_one({"_id": f"restored-{agent}"})
            await rt.mongo[seeded]["memory"].insert_one(
                {
                    "_id": f"guide-{agent}",
                    "agentWallet": agent,
                    "userAddress": "alice",
                    "source": "knowledge",
                    "content": "a guide indexed long ago",
                    "createdAt": old,
                    "changedAt": old,
                }
            )
            [line] = await database_gaps(settings, seeded, reach, [agent])
            assert line.startswith(
                f"memory.knowledge.v1 cannot be rebuilt: database {seeded} holds events from "
                f"{when(old)} (knowledge rows), the log "
            )
        finally:
            await rt.mongo.drop_database(rebuilt)
            await rt.mongo.drop_database(seeded)


async def test_the_oldest_stamp_skips_rows_written_before_stamps_and_reads_no_index_walk(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    """`oldest_stamp` asks without a condition on `changedAt` (the local server walks the
    stamp index for one: minutes for a replay's check of a large database); rows written
    before writers stamped them sort first, and the stamp is then filtered."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
    try:
        memory = mongo[unique("stamps")]["memory"]
        tenant = {"agentWallet": "0xstamps", "userAddress": "alice"}
        assert await oldest_stamp(memory, tenant, "session") is None
        await memory.insert_many(
            [
                {"_id": "a", **tenant, "source": "session", "changedAt": 300},
                {"_id": "b", **tenant, "source": "session", "changedAt": 200},
                {"_id": "c", **tenant, "source": "fact", "changedAt": 100},
                {
                    "_id": "d",
                    "agentWallet": "0xstamps",
                    "userAddress": "bob",
                    "source": "session",
                    "changedAt": 50,
                },
            ]
        )
        assert await oldest_stamp(memory, tenant, "session") == 200
        await memory.insert_one({"_id": "e", **tenant, "source": "session"})  # no stamp
        assert await oldest_stamp(memory, tenant, "session") == 200
        assert await oldest_stamp(memory, tenant, "fact") == 100
        assert await oldest_stamp(memory, tenant, "knowledge") is None
        await memory.drop()
    finally:
        await mongo.close()
