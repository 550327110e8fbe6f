"""Replay on the real stack: a few hundred turns and remembers ingested by the live groups,
rebuilt from the log into another database, compared document by document; then the live
database is dropped and rebuilt from the log too."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ports import Embedder, InputType, Vector
from schemas import topics
from services.endpoints import Endpoints
from services.ops.replay import replay
from services.ops.verify import compare, differences
from services.stream.offsets import end_offsets, wait_caught_up
from tests.support.embedders import WrappedEmbedder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


class CountingEmbedder(WrappedEmbedder):
    """An embedder that counts the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts = 0

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.texts += len(texts)
        return await self.inner.embed(texts, input_type)


CITIES = ("Porto", "Lisbon", "Madrid", "Oslo", "Tallinn")
TURNS = 240
REMEMBERS = 12


def turn_body(agent: str, n: int, now_ms: int) -> dict[str, object]:
    """Turn `n` of `TURNS`, the last one said a minute before `now_ms`."""
    user = f"user{n % 3}"
    return {
        "agentWallet": agent,
        "userAddress": user,
        "threadId": f"thread{n % 7}",
        "turnId": f"turn-{n}",
        "userMessage": f"I live in {CITIES[n % len(CITIES)]}. Please plan day {n} of my trip.",
        "assistantMessage": f"Day {n} is planned around the old town.",
        "toolEvents": [
            {"name": tool, "status": "success" if n % 4 else "error", "timestamp": now_ms + n}
            for tool in ("search_flights", "book_hotel")[: 1 + n % 2]
        ],
        "occurredAt": now_ms - (TURNS - n) * 60_000,
    }


async def test_replay_rebuilds_the_same_documents_and_verify_reports_equal(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str], now_ms: int
) -> None:
    agent = f"0xreplay{uuid.uuid4().hex[:10]}"
    rebuilt = unique("rebuilt")
    groups = [
        "transcripts",
        "embeddings",
        "extraction",
        "facts",
        "patterns",
        "knowledge",
        "workflows",
    ]
    # the live groups skip other tests' tenants on the shared topics, as the replay does
    async with groups_running(
        stack, minilm, "replay", groups, extractor="rules", only_agents=[agent]
    ) as (rt, client):
        settings = rt.settings
        turns: dict[tuple[str, int], int] = {}
        for n in range(TURNS):
            await client.record_turn(turn_body(agent, n, now_ms))
            pos = client.last_position
            assert pos is not None
            turns[(pos.topic, pos.partition)] = pos.offset + 1
        remembers: dict[tuple[str, int], int] = {}
        for n in range(REMEMBERS):
            await client.remember(
                {
                    "agentWallet": agent,
                    "userAddress": f"user{n % 3}",
                    "content": f"Prefers seat {n}A.",
                }
            )
            pos = client.last_position
            assert pos is not None
            remembers[(pos.topic, pos.partition)] = pos.offset + 1
        written: dict[str, dict[tuple[str, int], int]] = {"knowledge": {}, "workflows": {}}
        for n in range(2):  # the second is long enough for several chunks
            await client.index_knowledge(
                {
                    "agentWallet": agent,
                    "userAddress": "user0",
                    "key": f"guide-{n}",
                    "content": " ".join(
                        f"Sentence {i} of guide {n} about the old town." for i in range(1 + n * 120)
                    ),
                }
            )
            pos = client.last_position
            assert pos is not None
            written["knowledge"][(pos.topic, pos.partition)] = pos.offset + 1
        for n in range(6):
            await client.record_checkpoint(
                {
                    "workflowWallet": agent,
                    "runId": f"run-{n % 3}",
                    "agent": "planner",
                    "type": "workflow_evaluation" if n % 2 else "step_learning",
                    "success": n != 4,
                    "qualityScore": 0.5 + n / 20,
                    "messages": [
                        {"role": "assistant", "content": f"Step {n} of the trip is done."}
                    ],
                }
            )
            pos = client.last_position
            assert pos is not None
            written["workflows"][(pos.topic, pos.partition)] = pos.offset + 1
        bootstrap = stack.kafka_bootstrap
        for group, group_ends in written.items():
            await wait_caught_up(bootstrap, rt.group_id(group), group_ends, timeout=120)
        for group in ("transcripts", "patterns", "extraction"):
            await wait_caught_up(bootstrap, rt.group_id(group), turns, timeout=180)
        await wait_caught_up(bootstrap, rt.group_id("facts.remember"), remembers, timeout=60)
        facts_ends = await end_offsets(bootstrap, [topics.FACTS])
        await wait_caught_up(bootstrap, rt.group_id("facts"), facts_ends, timeout=120)
        # the live rows were stored pending and filled by the embeddings group
        vectors_ends = await end_offsets(bootstrap, [topics.EMBEDDINGS])
        await wait_caught_up(bootstrap, rt.group_id("embeddings"), vectors_ends, timeout=180)
        live_memory = rt.mongo[settings.mongo.db]["memory"]
        assert await live_memory.count_documents({"agentWallet": agent, "embeddingDim": 0}) == 0
        # and each turn's row with its messages' vectors (issue 32), which the rebuild must
        # find among the stored vectors as well (it runs no model, below)
        turn_rows = {"agentWallet": agent, "metadata.turnId": {"$regex": "^turn-"}}
        assert await live_memory.count_documents(turn_rows) == TURNS
        assert await live_memory.count_documents(turn_rows | {"unitEmbeddings": None}) == 0

        try:
            model = CountingEmbedder(minilm)
            # no Redis cache either: every vector the rebuild uses comes from the stored ones
            uncached = settings.with_values(embedding_cache_ttl_seconds=0)
            first = await replay(uncached, rebuilt, agents=[agent], embedder=model)
            assert model.texts == 0  # the rebuild ran no model
            assert first.records >= TURNS + REMEMBERS + 2 + 6
            report = await compare(settings, settings.mongo.db, rebuilt, agents=[agent])
            counts = {c.name: (c.live, c.rebuilt) for c in report.collections}
            assert counts["session_transcripts"] == (21, 21)  # 7 threads x 3 users
            assert counts["transcript_turns"] == (TURNS, TURNS)  # one document per turn
            assert counts["memory"][0] > TURNS  # session vectors, facts, remembers, entities
            assert counts["patterns"][0] >= 2
            memory = rt.mongo[rebuilt]["memory"]
            assert await memory.count_documents({"agentWallet": agent, "source": "knowledge"}) > 2
            checkpoints = {"agentWallet": agent, "metadata.workflow_wallet": agent}
            assert await memory.count_documents(checkpoints) == 6
            assert report.equal, [
                (c.name, c.missing, c.extra, c.changed) for c in report.collections
            ]

            # resumable: running it again finds nothing left to do and changes nothing
            again = await replay(settings, rebuilt, agents=[agent], embedder=minilm)
            assert again.records == 0
            assert (await compare(settings, settings.mongo.db, rebuilt, agents=[agent])).equal

            # drop the live database and rebuild it from the log as well
            await rt.mongo.drop_database(settings.mongo.db)
            await replay(settings, settings.mongo.db, fresh=True, agents=[agent], embedder=minilm)
            restored = await compare(settings, rebuilt, settings.mongo.db, agents=[agent])
            assert restored.equal
            assert {c.name: c.live for c in restored.collections} == {
                name: live for name, (live, _) in counts.items()
            }
        finally:
            await rt.mongo.drop_database(rebuilt)


async def test_replay_of_one_agent_leaves_other_tenants_out(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str], now_ms: int
) -> None:
    ours, theirs = (f"0x{name}{uuid.uuid4().hex[:10]}" for name in ("ours", "theirs"))
    rebuilt = unique("rebuilt")
    async with groups_running(stack, minilm, "replay1", ["transcripts"]) as (rt, client):
        ends: dict[tuple[str, int], int] = {}
        for agent in (ours, theirs):
            for n in range(5):
                await client.record_turn(turn_body(agent, n, now_ms))
                pos = client.last_position
                assert pos is not None
                ends[(pos.topic, pos.partition)] = max(
                    ends.get((pos.topic, pos.partition), 0), pos.offset + 1
                )
        await wait_caught_up(stack.kafka_bootstrap, rt.group_id("transcripts"), ends)
        try:
            await replay(rt.settings, rebuilt, agents=[ours], embedder=minilm)
            stored = rt.mongo[rebuilt]["session_transcripts"]
            assert await stored.count_documents({"agentWallet": ours}) == 5
            assert await stored.count_documents({"agentWallet": {"$ne": ours}}) == 0
        finally:
            await rt.mongo.drop_database(rebuilt)


def test_differences_name_the_changed_paths_and_tolerate_float_rounding() -> None:
    live = {"a": 1, "b": {"c": [1.0, 2.0], "d": "x"}, "e": 0.5}
    same = {"a": 1, "b": {"c": [1.0000001, 2.0], "d": "x"}, "e": 0.5}
    other = {"a": 2, "b": {"c": [1.0, 2.5], "d": "x"}, "f": 1}
    assert differences(live, same) == []
    assert differences(live, other) == ["a", "b.c", "e", "f"]
