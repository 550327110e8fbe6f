"""Invalidation, jobs and the dead-letter guard on the test broker: a `MemoryChanged` bumps
the written scope's namespace chain; a `JobRequested` runs its job and records it; a record
that is not a valid event goes to the dead-letter topic and the next record is processed."""

from __future__ import annotations

from collections.abc import Sequence

from engine.adapters.memory import HashingEmbedder
from engine.errors import DependencyFailed
from engine.ports import InputType, Vector
from engine.scoping import namespace_chain, tenant_filter
from schemas import topics
from schemas.events import JobRequested, MemoryChanged, MemoryRemembered
from tests.groups.conftest import Start, scope, turn


async def test_a_change_bumps_exactly_the_written_scopes_chain(start: Start) -> None:
    tenant = scope(threadId="t1")
    other = scope()
    async with start(["invalidation"]) as g:
        mine, theirs = namespace_chain(tenant), namespace_chain(other)
        before = (await g.rt.cache.token(mine), await g.rt.cache.token(theirs))
        changed = MemoryChanged(scope=tenant, layers=["working"], producer="test")
        await g.publish(changed, topics.CHANGED)
        after = (await g.rt.cache.token(mine), await g.rt.cache.token(theirs))
    assert after[0] != before[0]
    assert after[1] == before[1]
    assert g.letters == []


async def test_a_job_runs_once_and_is_recorded(start: Start) -> None:
    tenant = scope()
    job = JobRequested(type="consolidate", params={"agentWallet": tenant.agent_wallet})
    async with start(["facts", "jobs"]) as g:
        for text in ("I live in Oslo.", "i live in oslo."):
            await g.publish(MemoryRemembered(scope=tenant, content=text), topics.REMEMBER)
        await g.publish(job, topics.JOBS)
        await g.publish(job, topics.JOBS)  # redelivered: not run again
        record = await g.rt.jobs.get(job.job_id)
    assert record is not None
    assert record.status == "completed", record
    assert record.attempts == 1
    assert g.letters == []


async def test_a_malformed_record_is_dead_lettered_and_the_next_one_processed(
    start: Start,
) -> None:
    tenant = scope()
    async with start(["transcripts"]) as g:
        await g.publish(b"{not json", topics.TURNS, key=b"poison")
        await g.publish(b'{"scope": {"agentWallet": "0xA"}}', topics.TURNS, key=b"invalid")
        await g.publish(turn(tenant, "Still here.", "Yes."), topics.TURNS)
        stored = await g.rt.transcripts.recent(tenant_filter(tenant, durable=False), 10)
    assert [(d.key, d.source_topic, d.attempts) for d in g.letters] == [
        ("poison", topics.TURNS, 0),
        ("invalid", topics.TURNS, 0),
    ]
    assert all(d.group.endswith(".transcripts") for d in g.letters)
    assert len(stored) == 1


class FailingEmbedder(HashingEmbedder):
    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        raise DependencyFailed("embedding provider down")


async def test_a_failing_provider_is_retried_then_dead_lettered(start: Start) -> None:
    tenant = scope()
    async with start(["transcripts", "embeddings"], embedder=FailingEmbedder()) as g:
        await g.publish(turn(tenant, "Lost?", "No."), topics.TURNS)
        stored = await g.rt.transcripts.recent(tenant_filter(tenant, durable=False), 10)
    # storing the turn never waited for the model: only its vector request failed
    assert len(stored) == 1
    [letter] = g.letters
    assert (letter.error_type, letter.attempts) == ("DependencyFailed", 2)
    assert (letter.source_topic, letter.group.rsplit(".", 1)[-1]) == (
        topics.EMBEDDINGS,
        "embeddings",
    )
