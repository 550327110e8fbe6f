"""Sealed events and crypto-shredding on the real stack (issue 31): a user's words go through
the ingress and the sealing group into the log sealed under their tenant key; `forget_user`
deletes the key; a replay into a fresh database then rebuilds nothing of them (the canary is
in no collection, no topic of the log, no dead letter) while another user of the same agent
is rebuilt whole. A log holding clear and sealed events replays both; without a key nothing
is sealed, as before."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.ops.replay import replay
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import end_offsets
from tests.support.pipeline import drained, groups_running

pytestmark = pytest.mark.integration

KEY = base64.b64encode(b"k" * 32).decode()
GROUPS = [
    "sealing",
    "transcripts",
    "embeddings",
    "extraction",
    "facts",
    "patterns",
    "knowledge",
    "workflows",
    "invalidation",
    "items",
]
LOG = (
    topics.TURNS,
    topics.REMEMBER,
    topics.FACTS,
    topics.KNOWLEDGE,
    topics.WORKFLOWS,
    topics.EMBEDDINGS,
    topics.CHANGED,
    topics.DLQ,
)
"""The log's topics (sources and derived): what must never hold a word in clear. Request
and reply topics, and the ingress, keep theirs for their short retention (docs/security.md)."""


@asynccontextmanager
async def deployment(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, name: str, groups: list[str], **extra: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(stack, minilm, name, groups, extractor="rules", **extra) as running:
        yield running


async def records(bootstrap: str, names: Iterable[str]) -> list[bytes]:
    """Every value on the partitions of `names`, from the beginning to their current ends."""
    ends = await end_offsets(bootstrap, names)
    wanted = {TopicPartition(t, p): end for (t, p), end in ends.items() if end > 0}
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[bytes] = []
    try:
        consumer.assign(list(wanted))
        await consumer.seek_to_beginning(*wanted)
        left = dict(wanted)
        while left:
            batch = await consumer.getmany(timeout_ms=1000)
            for tp, got in batch.items():
                found += [r.value or b"" for r in got]
                if got and got[-1].offset + 1 >= left.get(tp, 0):
                    left.pop(tp, None)
            if not batch:
                break
    finally:
        await consumer.stop()
    return found


async def documents_with(rt: Runtime, db: str, word: str) -> list[str]:
    """`collection: document` of every document of `db` that holds `word`."""
    found = []
    for name in await rt.mongo[db].list_collection_names():
        async for doc in rt.mongo[db][name].find({}):
            text = json.dumps(doc, default=str, ensure_ascii=False)
            if word in text:
                found.append(f"{name}: {text[:200]}")
    return found


def letters_with(values: list[bytes], word: str) -> list[str]:
    """Dead letters whose payload or raw bytes hold `word`."""
    found = []
    for value in values:
        letter = json.loads(value)
        raw = base64.b64decode(letter.get("raw") or "").decode("utf-8", "replace")
        if word in raw or word in (letter.get("payload") or ""):
            found.append(letter["source_topic"])
    return found


async def test_an_erased_user_is_nowhere_after_a_replay_and_another_user_is_whole(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = f"0xshred{uuid.uuid4().hex[:10]}"
    canary, kept = f"canary{uuid.uuid4().hex[:8]}", f"keptword{uuid.uuid4().hex[:8]}"
    alice = {"agentWallet": agent, "userAddress": "alice"}
    bob = {"agentWallet": agent, "userAddress": "bob"}
    rebuilt = unique("shredded")
    async with deployment(
        stack, minilm, "shred", GROUPS, event_encryption_key=KEY, event_ingress=True
    ) as (rt, client):
        bootstrap, db = stack.kafka_bootstrap, rt.settings.mongo.db
        said = f"My name is Alice {canary}. I live in {canary}ville and I love {canary} tea."
        turn = await client.record_turn(
            {**alice, "threadId": "t1", "userMessage": said, "assistantMessage": f"Hi {canary}."},
            wait=True,
        )
        await client.wait_processed(turn.turn_id, ["facts", "patterns"])
        await client.remember({**alice, "content": f"Alice keeps a {canary} diary."}, wait=True)
        await client.index_knowledge({**alice, "key": "notes", "content": f"Notes on {canary}."})
        await client.record_checkpoint(
            {
                "workflowWallet": agent,
                "userAddress": "alice",
                "runId": "r1",
                "agent": "planner",
                "type": "step_learning",
                "messages": [{"role": "assistant", "content": f"Planned the {canary} trip."}],
            }
        )
        # a record no group accepts: dead-lettered as it is in the log, sealed
        await client.publish(topics.TURNS, _Bogus(scope=alice, words=canary), "t1")
        bob_turn = {**bob, "threadId": "t2", "userMessage": f"I live in {kept}town."}
        await client.record_turn({**bob_turn, "assistantMessage": "Noted."}, wait=True)
        await drained(
            bootstrap,
            rt.settings.group_prefix,
            [
                ("sealing", topics.INGRESS),
                ("knowledge", topics.KNOWLEDGE),
                ("workflows", topics.WORKFLOWS),
                ("transcripts", topics.TURNS),
                ("embeddings", topics.EMBEDDINGS),
            ],
        )
        # an edit, so the item history holds the user's words twice
        row = await rt.mongo[db]["memory"].find_one({**alice, "content": {"$regex": "diary"}})
        assert row is not None
        edited = await client.item("update", row["_id"], alice, content=f"{canary} diary, v2")
        assert edited.error is None
        assert await rt.mongo[db]["memory_history"].count_documents(alice) >= 2

        stored = await documents_with(rt, db, canary)
        assert {s.split(":")[0] for s in stored} >= {"memory", "transcript_turns", "memory_history"}
        log = await records(bootstrap, LOG)
        assert log, "the log holds the test's events"
        assert not [v for v in log if canary.encode() in v], "a word of the user in clear"
        letters = await records(bootstrap, [topics.DLQ])
        assert not letters_with(letters, canary)

        reply = await client.forget_user(alice)
        assert reply.erased is not None
        assert reply.erased["keys"] == 1
        assert await documents_with(rt, db, canary) == []

        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="engine.sealing"):
            report = await replay(rt.settings, rebuilt, fresh=True, agents=[agent], embedder=minilm)
        try:
            assert report.records > 0
            assert await documents_with(rt, rebuilt, canary) == []
            assert await documents_with(rt, rebuilt, kept)  # bob is rebuilt
            assert await rt.mongo[rebuilt]["memory"].count_documents(alice) == 0
            assert await rt.mongo[rebuilt]["memory_history"].count_documents(alice) == 0
            # (the shared topics also hold the sealed records of other tests' erased tenants,
            # which the replay skips and logs as well: only this agent's lines count here)
            skipped = [
                r
                for r in caplog.records
                if "erased tenant" in r.getMessage() and getattr(r, "agent", None) == agent
            ]
            assert len(skipped) == 1  # logged once for the tenant, however many records
            # the replay's groups skipped the user's records: none of them was dead-lettered
            # (the shared topics also hold other tests' poison records, which the replay's
            # groups dead-letter as any group does: only this agent's records count here)
            after = [json.loads(v) for v in await records(bootstrap, [topics.DLQ])]
            ours = [
                x
                for x in after
                if x["group"].startswith(report.group_prefix)
                and agent in f"{x.get('key')} {x.get('payload')} {x.get('raw')}"
            ]
            assert not ours
        finally:
            await rt.mongo.drop_database(rebuilt)


class _Bogus:
    """A value that is no event (its fields are not a turn's), for a dead letter."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields
        self.scope = type("S", (), {"agent_wallet": "", "user_address": None})()
        self.scope.agent_wallet = fields["scope"]["agentWallet"]
        self.scope.user_address = fields["scope"]["userAddress"]

    def model_dump_json(self) -> str:
        return json.dumps(self.fields)


async def test_a_log_of_clear_and_sealed_events_replays_both(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str]
) -> None:
    agent = f"0xmixed{uuid.uuid4().hex[:10]}"
    rebuilt = unique("mixed")
    words = {"clear": f"clear{uuid.uuid4().hex[:8]}", "sealed": f"sealed{uuid.uuid4().hex[:8]}"}
    groups = ["sealing", "transcripts", "invalidation"]
    async with deployment(
        stack, minilm, "mixed", groups, event_encryption_key=KEY, event_ingress=True
    ) as (rt, sealed_client):
        async with MemoryClient(
            stack.kafka_bootstrap,
            timeout=15,
            group_prefix=rt.settings.group_prefix,
            deferred_embeddings=False,
        ) as clear_client:  # an SDK of before: publishes to the source topic in clear
            for how, client in (("clear", clear_client), ("sealed", sealed_client)):
                body = {"agentWallet": agent, "userAddress": "u", "threadId": how}
                await client.record_turn(
                    {**body, "userMessage": f"I said {words[how]}.", "assistantMessage": "Ok."},
                    wait=True,
                )
        turns = await records(stack.kafka_bootstrap, [topics.TURNS])
        assert any(words["clear"].encode() in v for v in turns)
        assert not any(words["sealed"].encode() in v for v in turns)
        try:
            await replay(rt.settings, rebuilt, fresh=True, agents=[agent], embedder=minilm)
            for word in words.values():
                assert await documents_with(rt, rebuilt, word), word
        finally:
            await rt.mongo.drop_database(rebuilt)


async def test_without_a_key_events_stay_as_they_were_and_a_sealed_one_is_dead_lettered(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    agent = f"0xclear{uuid.uuid4().hex[:10]}"
    word = f"plain{uuid.uuid4().hex[:8]}"
    scope = {"agentWallet": agent, "userAddress": "u"}
    async with deployment(stack, minilm, "nokey", ["sealing", "transcripts", "invalidation"]) as (
        rt,
        client,
    ):
        assert rt.sealer is None
        assert not client.ingress
        at = await client.record_turn(
            {**scope, "threadId": "t", "userMessage": f"I said {word}.", "assistantMessage": "Ok."},
            wait=True,
        )
        assert client.last_position is not None
        assert client.last_position.topic == topics.TURNS  # no ingress without the setting
        turns = await records(stack.kafka_bootstrap, [topics.TURNS])
        assert any(word.encode() in v and at.turn_id.encode() in v for v in turns)
        # a runtime sending through the ingress anyway: forwarded as it is, nothing lost
        async with MemoryClient(
            stack.kafka_bootstrap,
            timeout=15,
            group_prefix=rt.settings.group_prefix,
            deferred_embeddings=False,
            ingress=True,
        ) as through:
            body = {
                **scope,
                "threadId": "t2",
                "userMessage": f"Also {word}.",
                "assistantMessage": "Ok.",
            }
            forwarded = await through.record_turn(body, wait=True)
            assert through.last_position is not None
            assert through.last_position.topic == topics.INGRESS
        stored = rt.mongo[rt.settings.mongo.db]["transcript_turns"]
        assert await stored.count_documents({"turnId": forwarded.turn_id}) == 1
        # a sealed record reaching a group with no key: dead-lettered, redrivable, not lost
        before = len(await records(stack.kafka_bootstrap, [topics.DLQ]))
        envelope = {"sealed": 1, "agent": agent, "user": "u", "keyId": "0" * 16, "data": "AA=="}
        await client.publish(topics.TURNS, _Raw(envelope), "t")
        await drained(
            stack.kafka_bootstrap, rt.settings.group_prefix, [("transcripts", topics.TURNS)]
        )
        letters = [json.loads(v) for v in await records(stack.kafka_bootstrap, [topics.DLQ])]
        assert [x["error_type"] for x in letters[before:]] == ["SealedEventNoKey"]


class _Raw:
    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value

    def model_dump_json(self) -> str:
        return json.dumps(self.value, separators=(",", ":"))


async def test_a_deployment_for_some_agents_seals_their_ingress_and_skips_the_others(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    ours, theirs = (f"0x{name}{uuid.uuid4().hex[:10]}" for name in ("ours", "theirs"))
    async with deployment(
        stack,
        minilm,
        "only",
        ["sealing", "transcripts", "invalidation"],
        event_encryption_key=KEY,
        event_ingress=True,
        only_agents=[ours],
    ) as (rt, client):
        body = {
            "userAddress": "u",
            "threadId": "t",
            "userMessage": "Hi.",
            "assistantMessage": "Ok.",
        }
        turn = await client.record_turn({**body, "agentWallet": ours}, wait=True)
        await client.record_turn({**body, "agentWallet": theirs})
        await drained(
            stack.kafka_bootstrap, rt.settings.group_prefix, [("sealing", topics.INGRESS)]
        )
        stored = rt.mongo[rt.settings.mongo.db]["transcript_turns"]
        assert await stored.count_documents({"turnId": turn.turn_id}) == 1
        assert await stored.count_documents({"agentWallet": theirs}) == 0
