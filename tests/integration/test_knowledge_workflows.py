"""Knowledge documents and workflow checkpoints through the real stack (reference §14): the
SDK publishes them on Kafka, the knowledge and workflows groups store them, pre_turn's
vectors layer finds a chunk, reliability is read request-reply, a redelivered event stores
nothing new, and another tenant sees nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.knowledge import chunk_ids, rows_scope
from engine.scoping import TenantFilter
from schemas.bounds import ValueOutOfRange
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient, Position
from services.stream.offsets import wait_processed
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

FILLER = "\n".join(
    f"Section {i}: the maintenance crew logs inspections, signs the sheet and files it." * 2
    for i in range(14)
)
FACT = "The Zephyr reactor coolant must be replaced every 37 days by the night shift."


@pytest.fixture
async def pipeline(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(
        stack, minilm, "callers", ["knowledge", "workflows", "invalidation", "search"]
    ) as pair:
        yield pair


async def processed(rt: Runtime, client: MemoryClient, group: str) -> Position:
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        rt.endpoints.kafka_bootstrap,
        rt.group_id(group),
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )
    return pos


async def test_knowledge_is_indexed_once_found_by_pre_turn_and_invisible_to_others(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = pipeline
    agent = f"0xkn{uuid.uuid4().hex[:10]}"
    mine = {"agentWallet": agent, "userAddress": "ops"}
    event = await client.index_knowledge(
        {**mine, "content": f"{FILLER}\n{FACT}\n{FILLER}", "key": "runbook", "source": "file"}
    )
    await processed(rt, client, "knowledge")
    ids = chunk_ids(rows_scope(event.scope), event.content, "runbook", None)
    assert len(ids) > 2

    async def stored() -> list[str]:
        rows = await rt.memory.active_rows(TenantFilter(agent, "ops"), sources=["knowledge"])
        return sorted(r.vector_id for r in rows)

    assert await stored() == sorted(ids)
    query = "How often is the Zephyr reactor coolant replaced?"
    deadline = time.monotonic() + 20
    while True:
        reply = await client.context(query, mine, layers=["vectors"], max_item_chars=2000)
        if "37 days" in (reply.prompt or "") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert "37 days" in (reply.prompt or "")
    hits = (await client.search_layers(query, mine, layers=["vectors"])).layers["vectors"]
    assert hits[0]["source"] == "knowledge"
    assert hits[0]["id"] in ids

    # redelivery: the same event again changes nothing
    await client.publish_knowledge(event)
    await processed(rt, client, "knowledge")
    assert await stored() == sorted(ids)

    for outsider in (
        {"agentWallet": agent, "userAddress": "guest"},
        {"agentWallet": agent},  # agent-level reads do not see a user's workspace
        {"agentWallet": f"0xother{uuid.uuid4().hex[:8]}", "userAddress": "ops"},
    ):
        seen = await client.search_layers(query, outsider, layers=["vectors"])
        assert seen.layers.get("vectors", []) == [], outsider
        assert "37 days" not in ((await client.context(query, outsider)).prompt or "")


async def test_checkpoints_give_reliability_once_each_and_only_to_their_tenant(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = pipeline
    wallet = f"0xwf{uuid.uuid4().hex[:10]}"
    run = {"workflowWallet": wallet, "runId": "run-7", "userAddress": "lee"}
    said = [{"role": "user", "content": "Deploy the billing service"}]
    events = [
        await client.record_checkpoint(
            {
                **run,
                "agent": "planner",
                "type": "step_learning",
                "step": 1,
                "messages": [
                    *said,
                    {"role": "assistant", "content": "Rolled out to staging first"},
                ],
                "success": True,
                "qualityScore": 0.9,
            }
        ),
        await client.record_checkpoint(
            {
                **run,
                "agent": "planner",
                "type": "step_learning",
                "step": 2,
                "messages": [*said, {"role": "assistant", "content": "Production canary failed"}],
                "success": False,
                "qualityScore": 0.5,
            }
        ),
        await client.record_checkpoint(
            {
                **run,
                "agent": "planner",
                "type": "workflow_evaluation",
                "goal": "Ship billing",
                "success": "true",
            }
        ),
        await client.record_checkpoint(
            {
                **run,
                "agent": "coder",
                "type": "step_learning",
                "goal": "Fix the canary",
                "success": False,
            }
        ),
    ]
    await processed(rt, client, "workflows")
    scope = {"agentWallet": wallet, "userAddress": "lee"}
    planner = await client.reliability("planner", scope)
    assert (planner.agent, planner.runs, planner.graded) == ("planner", 3, 3)
    assert planner.success_rate == pytest.approx(2 / 3)
    assert planner.avg_quality == pytest.approx(0.7)
    assert (await client.reliability("planner", scope, last=1)).runs == 1

    # redelivered events: still one row each
    for event in events:
        await client.publish_checkpoint(event)
    await processed(rt, client, "workflows")
    rows = await rt.memory.active_rows(TenantFilter(wallet, "lee"), sources=["session"])
    assert len(rows) == len(events)
    assert {r.scope.thread_id for r in rows} == {"run-7"}
    assert (await client.reliability("planner", scope)).runs == 3

    # the checkpoint rows are the workflow wallet's memory: its vectors layer finds them
    hits = await client.search_layers("billing canary", {**scope, "threadId": "run-7"})
    assert any(h["source"] == "session" for h in hits.layers.get("vectors", []))

    for outsider in (
        {"agentWallet": wallet, "userAddress": "kim"},
        {"agentWallet": wallet},
        {"agentWallet": f"0xother{uuid.uuid4().hex[:8]}", "userAddress": "lee"},
    ):
        other = await client.reliability("planner", outsider)
        assert (other.runs, other.success_rate, other.avg_quality) == (0, 0.0, 0.0), outsider


async def test_reliability_counts_graded_runs_only(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    # issue 17: four evaluations (three succeeded) and a step learning without a success
    # value read 0.6 (3 of 5); a checkpoint that was never judged is not a failed run
    rt, client = pipeline
    wallet = f"0xwf{uuid.uuid4().hex[:10]}"
    scope = {"agentWallet": wallet, "userAddress": "kai"}
    at = int(time.time() * 1000)
    for i, success in enumerate((True, True, False, True)):
        await client.record_checkpoint(
            {
                **scope,
                "runId": f"run-{i}",
                "agent": "reviewer",
                "type": "workflow_evaluation",
                "goal": f"Review pull request {i}",
                "success": success,
                "qualityScore": 0.5 + i / 10,
                "occurredAt": at + i,
            }
        )
    await client.record_checkpoint(
        {
            **scope,
            "runId": "run-4",
            "agent": "reviewer",
            "type": "step_learning",
            "step": "read the diff",
            "messages": [{"role": "assistant", "content": "The diff touches the billing code"}],
            "occurredAt": at + 4,
        }
    )
    await processed(rt, client, "workflows")
    reviewer = await client.reliability("reviewer", scope)
    assert (reviewer.runs, reviewer.graded) == (5, 4)
    assert reviewer.success_rate == pytest.approx(0.75)
    assert reviewer.avg_quality == pytest.approx((0.5 + 0.6 + 0.7 + 0.8) / 4)
    # the newest run alone is the ungraded step: a run, and no rate to speak of
    newest = await client.reliability("reviewer", scope, last=1)
    assert (newest.runs, newest.graded, newest.success_rate) == (1, 0, 0.0)
    with pytest.raises(ValueOutOfRange, match="last"):
        await client.reliability("reviewer", scope, last=0)
