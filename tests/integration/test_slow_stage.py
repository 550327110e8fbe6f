"""A slow stage never loses its group (issue 29): the `embeddings` group, with a deliberately
slow model and a backlog far larger than one poll interval of work, on the real broker.

Bounded (`kafka.batch_budget_ms` a quarter of `kafka.max_poll_interval_ms`): every batch
stops at its budget, commits what it finished and hands the rest back, so the group keeps
its membership (no commit is refused) and processes every request exactly once. Unbounded (a
budget past the poll interval, which the settings refuse and a test can still force): the
consumer outlasts the poll interval and leaves the group, yet it rejoins and finishes every
request instead of standing still."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ports import InputType, Vector
from schemas import topics
from schemas.events import EmbeddingRequested, VectorTarget
from schemas.scope import Scope
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.runtime import Runtime
from services.settings import Settings
from services.stream.offsets import end_offsets, start_at_end, wait_caught_up
from tests.support.embedders import WrappedEmbedder
from tests.support.net import free_port
from tests.support.pipeline import subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

REQUESTS, TEXTS_EACH = 40, 8
SECONDS_PER_TEXT = 0.05
"""The slow model: 320 texts take 16 s, four poll intervals of 4 s."""
POLL_MS = 4_000


@dataclass
class SlowEmbedder(WrappedEmbedder):
    """The real embedder, `SECONDS_PER_TEXT` slower per text; counts what it embedded."""

    inner: LocalMiniLMEmbedder
    texts: Counter[str] = field(default_factory=Counter)

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        await asyncio.sleep(SECONDS_PER_TEXT * len(texts))
        self.texts.update(texts)
        return await self.inner.embed(texts, input_type)


def agent_of(run: str) -> str:
    return f"0xslow{run}"


def requests(run: str, model: str) -> list[EmbeddingRequested]:
    scope = Scope(agent_wallet=agent_of(run))
    return [
        EmbeddingRequested(
            scope=scope,
            thread_id=f"t{n % 10}",
            model=model,
            targets=[
                VectorTarget(
                    vector_id=f"vec_{run}_{n}_{i}", text=f"Note {i} of request {n} ({run})."
                )
                for i in range(TEXTS_EACH)
            ],
        )
        for n in range(REQUESTS)
    ]


def settings_for(stack: Endpoints, run: str, port: int) -> Settings:
    return make_settings(
        stack,
        f"slow_{run}",
        group_prefix=f"slow-{run}",
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=POLL_MS,
        batch_budget_ms=POLL_MS // 4,
        outage_wait_seconds=2,
        embedding_stage_max_texts=128,  # the first slice, before the speed is known: 16
        extractor="none",
        http_port=port,
        # the topic is shared by the session: other tests' groups may still publish on it
        only_agents=[agent_of(run)],
    )


@asynccontextmanager
async def backlog_then_group(
    stack: Endpoints, settings: Settings, embedder: SlowEmbedder, run: str
) -> AsyncIterator[tuple[Runtime, dict[tuple[str, int], int]]]:
    """Publish every request, then start the `embeddings` group on them; yields the runtime
    and the topic's end offsets once all are published."""
    await start_at_end(stack.kafka_bootstrap, subscriptions(settings.group_prefix, ["embeddings"]))
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await producer.start()
    try:
        for request in requests(run, embedder.model):
            await producer.send_and_wait(
                topics.EMBEDDINGS,
                request.model_dump_json().encode(),
                key=topics.thread_key(request.thread_id).encode(),
            )
    finally:
        await producer.stop()
    ends = await end_offsets(stack.kafka_bootstrap, [topics.EMBEDDINGS])
    async with running_groups(
        settings,
        ["embeddings"],
        embedder=embedder,
        broker_logs=False,  # type: ignore[arg-type]
    ) as rt:
        yield rt, ends
        await rt.mongo.drop_database(settings.mongo.db)


async def counters(port: int, group: str) -> dict[str, float]:
    """This process's batch counters of `group`, by sample name (and reason)."""
    async with httpx.AsyncClient(timeout=5) as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    found: dict[str, float] = Counter()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("group") != group:
                continue
            name = s.name if "reason" not in s.labels else f"{s.name}:{s.labels['reason']}"
            found[name] += s.value
    return found


async def all_stored(rt: Runtime, run: str) -> bool:
    texts = [t.text for r in requests(run, rt.embedder.model) for t in r.targets]
    return all(v is not None for v in await rt.embedder.known(texts))


async def test_a_slow_stage_keeps_its_group_and_processes_every_request_once(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    run, port = uuid.uuid4().hex[:8], free_port()
    settings = settings_for(stack, run, port)
    embedder = SlowEmbedder(minilm)
    async with backlog_then_group(stack, settings, embedder, run) as (rt, ends):
        group = rt.group_id("embeddings")
        await wait_caught_up(stack.kafka_bootstrap, group, ends, timeout=180)
        seen = await counters(port, group)
        assert await all_stored(rt, run)

    assert seen["mnemostream_events_processed_total"] == REQUESTS  # each once: none redone
    assert seen["mnemostream_batch_commits_refused_total"] == 0  # the membership was kept
    assert seen["mnemostream_batch_records_handed_back_total:budget"] > 0  # batches were cut
    assert set(embedder.texts.values()) == {1}  # the model saw each text once
    assert len(embedder.texts) == REQUESTS * TEXTS_EACH


async def test_a_batch_that_outlasts_the_poll_interval_rejoins_and_finishes(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    run, port = uuid.uuid4().hex[:8], free_port()
    # the unbounded batch of before: what the settings refuse (`with_values` skips that check)
    settings = settings_for(stack, run, port).with_values(batch_budget_ms=60_000)
    embedder = SlowEmbedder(minilm)
    caplog.set_level(logging.INFO, logger="aiokafka.consumer.group_coordinator")
    async with backlog_then_group(stack, settings, embedder, run) as (rt, ends):
        group = rt.group_id("embeddings")
        await wait_caught_up(stack.kafka_bootstrap, group, ends, timeout=180)
        seen = await counters(port, group)
        assert await all_stored(rt, run)

    joins = [r for r in caplog.records if "newly assigned partitions" in r.getMessage()]
    assert len(joins) >= 2  # it lost the group and joined it again
    assert seen["mnemostream_events_processed_total"] >= REQUESTS
    assert len(embedder.texts) == REQUESTS * TEXTS_EACH  # a redo reads stored vectors
