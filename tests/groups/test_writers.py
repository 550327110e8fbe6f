"""The writer groups on the test broker: facts (`MemoryRemembered`, and `FactsExtracted`
published by the extraction group), knowledge, workflows (with its reliability reply),
patterns; each announces `MemoryChanged` after its write."""

from __future__ import annotations

from engine.scoping import tenant_filter
from schemas import topics
from schemas.events import (
    KnowledgeSubmitted,
    MemoryRemembered,
    ToolEvent,
    WorkflowCheckpointRecorded,
)
from schemas.requests import ReliabilityReply, ReliabilityRequest
from schemas.scope import Scope
from tests.groups.conftest import Start, scope, turn


async def test_a_remembered_memory_becomes_one_fact(start: Start) -> None:
    tenant = scope()
    event = MemoryRemembered(scope=tenant, content="My favourite colour is teal.")
    async with start(["facts"]) as g:
        await g.publish(event, topics.REMEMBER)
        await g.publish(event, topics.REMEMBER)  # redelivered: still one fact
        rows = await g.rt.memory.active_rows(tenant_filter(tenant, durable=True))
    assert [r.content for r in rows] == ["My favourite colour is teal."]
    assert next(c.layers for c in g.changes) == ["graph", "vectors"]
    assert g.letters == []


async def test_an_extracted_turn_reaches_the_facts_group(start: Start) -> None:
    tenant = scope()
    event = turn(tenant, "My name is Ada and I work as a pilot.", "Nice to meet you, Ada.")
    async with start(["extraction", "facts"]) as g:
        await g.publish(event, topics.TURNS)
        rows = await g.rt.memory.active_rows(tenant_filter(tenant, durable=True))
    assert any("pilot" in r.content.lower() for r in rows), [r.content for r in rows]
    assert g.letters == []


async def test_a_knowledge_document_is_indexed(start: Start) -> None:
    tenant = scope()
    doc = KnowledgeSubmitted(scope=tenant, content="The warranty lasts two years.", key="w")
    async with start(["knowledge"]) as g:
        await g.publish(doc, topics.KNOWLEDGE)
        rows = await g.rt.memory.active_rows(tenant_filter(tenant, durable=True))
    assert [r.source for r in rows] == ["knowledge"]
    assert [c.layers for c in g.changes] == [["vectors"]]


async def test_a_workflow_checkpoint_counts_in_the_agents_reliability(start: Start) -> None:
    run = Scope.parse({"agentWallet": scope().agent_wallet, "userAddress": "u", "threadId": "r1"})
    event = WorkflowCheckpointRecorded.model_validate(
        {
            "scope": run,
            "agent": "planner",
            "type": "workflow_evaluation",
            "goal": "plan a trip",
            "success": True,
        }
    )
    async with start(["workflows"]) as g:
        await g.publish(event, topics.WORKFLOWS)
        reply = await g.request(
            ReliabilityRequest(scope=run, agent="planner"), topics.RELIABILITY, ReliabilityReply
        )
    assert reply.error is None
    assert (reply.runs, reply.success_rate) == (1, 1.0)
    assert g.letters == []


async def test_a_tool_sequence_is_counted_as_a_pattern(start: Start) -> None:
    tenant = scope()
    steps = [
        ToolEvent(name="search_flights", timestamp=1),
        ToolEvent(name="book_flight", timestamp=2),
    ]
    event = turn(tenant, "book me a flight", "done").model_copy(update={"tool_events": steps})
    async with start(["patterns"]) as g:
        await g.publish(event, topics.TURNS)
        found = await g.rt.patterns.list(tenant_filter(tenant, durable=True), 10)
    assert [p.steps for p in found] == [("search_flights", "book_flight")]
    assert [c.layers for c in g.changes] == [["patterns"]]
