"""A stuck partition is visible (issue 13 §1): while a handler hangs on one record with more
waiting behind it, `mnemostream_partition_stalled` is 1 for that partition and `/readyz` is
503 naming it; once the record completes, both clear. `/livez` stays 200 throughout (the
process is alive: restarting it would not unstick a record)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ports import InputType, Vector
from schemas import topics
from schemas.inputs import turn_recorded
from services.endpoints import Endpoints
from services.stream.offsets import wait_processed
from tests.support.embedders import WrappedEmbedder
from tests.support.net import free_port
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


@dataclass
class HangingEmbedder(WrappedEmbedder):
    """The real embedder, except that a text mentioning "glacier" waits for `release`."""

    inner: LocalMiniLMEmbedder
    release: asyncio.Event = field(default_factory=asyncio.Event)
    hanging: asyncio.Event = field(default_factory=asyncio.Event)

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        if any("glacier" in t for t in texts):
            self.hanging.set()
            await self.release.wait()
        return await self.inner.embed(texts, input_type)


def stalled(text: str, group: str) -> dict[tuple[str, str], float]:
    return {
        (s.labels["topic"], s.labels["partition"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "mnemostream_partition_stalled" and s.labels["group"] == group
    }


async def test_a_hanging_record_marks_its_partition_stalled_until_it_completes(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    agent = f"0xstall{uuid.uuid4().hex[:10]}"
    embedder = HangingEmbedder(minilm)
    port = free_port()
    async with groups_running(
        stack,
        embedder,  # type: ignore[arg-type]
        "stall",
        ["transcripts"],
        http_port=port,
        lag_interval_seconds=0.2,
        stall_seconds=1.0,
        embedding_cache_ttl_seconds=0,
    ) as (rt, client):
        producer = client._require_producer()
        sent = []
        for text in ("We crossed the glacier at noon.", "Then we rested.", "And ate soup."):
            turn = turn_recorded(
                {
                    "agentWallet": agent,
                    "threadId": "t",
                    "userMessage": text,
                    "assistantMessage": "ok",
                }
            )
            sent.append(
                await producer.send_and_wait(
                    topics.TURNS,
                    turn.model_dump_json().encode(),
                    key=agent.encode(),
                    partition=5,
                    headers=[("content-type", b"application/json")],
                )
            )
        await asyncio.wait_for(embedder.hanging.wait(), 60)
        group = rt.group_id("transcripts")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            deadline = time.monotonic() + 60
            while True:
                ready = await http.get("/readyz")
                metric = stalled((await http.get("/metrics")).text, group)
                if ready.status_code == 503 and metric.get((topics.TURNS, "5")) == 1:
                    break
                assert time.monotonic() < deadline, (ready.json(), metric)
                await asyncio.sleep(0.1)
            reasons = ready.json()["missing"]
            assert any(f"{topics.TURNS}[5]" in r and "unchanged" in r for r in reasons), reasons
            assert all(v == 0 for (t, p), v in metric.items() if (t, p) != (topics.TURNS, "5"))
            assert (await http.get("/livez")).status_code == 200

            embedder.release.set()
            await wait_processed(stack.kafka_bootstrap, group, topics.TURNS, 5, sent[-1].offset)
            deadline = time.monotonic() + 60
            while True:
                ready = await http.get("/readyz")
                metric = stalled((await http.get("/metrics")).text, group)
                if ready.status_code == 200 and metric.get((topics.TURNS, "5")) == 0:
                    break
                assert time.monotonic() < deadline, (ready.json(), metric)
                await asyncio.sleep(0.1)
