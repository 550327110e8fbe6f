"""One partition, three turns in a row: a poison message (valid JSON, impossible content),
a turn whose handler crashes (its embedding service fails on every attempt), and an ordinary
turn. The first two end in the DLQ with their errors, the third is stored all the same, and
after the fix a redrive stores the crashed turn."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ports import InputType, Vector
from schemas import topics
from services.endpoints import Endpoints
from services.stream.dead_letters import read_letters, redrive
from services.stream.offsets import end_offsets, wait_caught_up, wait_processed
from tests.support.embedders import WrappedEmbedder
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


@dataclass
class CrashingEmbedder(WrappedEmbedder):
    """The real embedder behind a switch: while `broken`, any text mentioning "volcano" makes
    the call fail, as an embedding service that crashes on one input would."""

    inner: LocalMiniLMEmbedder
    broken: bool = True

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        if self.broken and any("volcano" in t for t in texts):
            raise RuntimeError("embedding service crashed on this input")
        return await self.inner.embed(texts, input_type)


async def test_poison_and_crash_are_dead_lettered_the_next_turn_is_stored_and_redrive_fixes(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    agent = f"0xpoison{uuid.uuid4().hex[:10]}"
    session = f"session:{agent}:one"
    embedder = CrashingEmbedder(minilm)
    async with groups_running(
        stack,
        embedder,  # type: ignore[arg-type]
        "poison",
        ["transcripts"],
        only_agents=[agent],
        max_attempts=3,
        retry_backoff_ms=20,
        embedding_cache_ttl_seconds=0,
    ) as (rt, client):
        producer = client._require_producer()
        poison = json.dumps(
            {"scope": {"agentWallet": agent}, "messages": "a turn from the year 1 BC"}
        ).encode()
        first = await producer.send_and_wait(topics.TURNS, poison, key=session.encode())

        def body(text: str) -> dict[str, object]:
            return {
                "agentWallet": agent,
                "threadId": "one",
                "sessionId": session,
                "userMessage": text,
                "assistantMessage": "Noted.",
            }

        crashed = await client.record_turn(body("We hiked up the volcano at dawn."))
        fine = await client.record_turn(body("Then we had pastries in the old town."))
        last = client.last_position
        assert last is not None
        assert last.partition == first.partition  # all three on one partition, in order
        await wait_processed(
            stack.kafka_bootstrap,
            rt.group_id("transcripts"),
            last.topic,
            last.partition,
            last.offset,
            timeout=60,
        )

        db = rt.mongo[rt.settings.mongo.db]
        [stored] = await stored_transcripts(db, {"sessionId": session})
        contents = [m["content"] for m in stored["messages"]]
        assert fine.messages[0].content in contents
        assert crashed.messages[0].content not in contents

        group = rt.group_id("transcripts")
        letters = [
            x
            for x in await read_letters(stack.kafka_bootstrap)
            if x.letter.group == group  # other tests' poison on the shared topic is not ours
            and x.letter.partition == first.partition
            and x.letter.offset >= first.offset
        ]
        by_offset = {x.letter.offset: x.letter for x in letters}
        assert sorted(by_offset) == [first.offset, first.offset + 1]
        assert by_offset[first.offset].error_type == "ValidationError"
        assert by_offset[first.offset].attempts == 0  # retrying cannot fix a schema error
        assert by_offset[first.offset + 1].error_type == "RuntimeError"
        assert by_offset[first.offset + 1].attempts == 3
        assert by_offset[first.offset + 1].redrive == (
            f"mnemostream dlq redrive --group {group} "
            f"--source {topics.TURNS}:{first.partition}:{first.offset + 1}"
        )
        assert "crashed" in by_offset[first.offset + 1].error

        embedder.broken = False  # the fix
        redriven = [x for x in letters if x.letter.offset == first.offset + 1]
        assert await redrive(stack.kafka_bootstrap, redriven) == 1
        key = (topics.TURNS, first.partition)
        end = (await end_offsets(stack.kafka_bootstrap, [topics.TURNS]))[key]
        await wait_caught_up(stack.kafka_bootstrap, group, {key: end}, timeout=90)
        [stored] = await stored_transcripts(db, {"sessionId": session})
        assert crashed.messages[0].content in [m["content"] for m in stored["messages"]]
