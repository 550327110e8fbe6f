"""Knowledge and workflow contracts (reference §14): the loose-body parsers, the frozen
contracts' limits, the reliability request/reply, and the ids the edge can name before the
rows exist."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from engine.adapters.memory import HashingEmbedder, InMemoryMemoryStore
from engine.ingest.knowledge import chunk_ids, index_document, rows_scope
from engine.ingest.workflows import checkpoint_id, checkpoint_of, record_checkpoint
from schemas import topics
from schemas.callers import checkpoint_recorded, knowledge_submitted
from schemas.events import (
    MAX_DOCUMENT_CHARS,
    KnowledgeSubmitted,
    WorkflowCheckpointRecorded,
)
from schemas.ids import to_ms
from schemas.requests import ReliabilityReply, ReliabilityRequest
from schemas.scope import Scope, ScopeError

NOW = datetime(2024, 5, 1, tzinfo=UTC)
AGENT = "0xAgent"


def doc(**fields: Any) -> dict[str, Any]:
    return {"agentWallet": AGENT, "userAddress": "U1", "content": "Handbook text.", **fields}


def cp(**fields: Any) -> dict[str, Any]:
    return {
        "workflowWallet": "0xFlow",
        "run_id": "run-1",
        "user_id": "U1",
        "agent": "planner",
        "type": "step_learning",
        "messages": [
            {"role": "user", "content": "Plan it"},
            {"role": "assistant", "content": "ok"},
        ],
        "step": 2,
        "success": True,
        "qualityScore": 0.8,
        **fields,
    }


# -- topics ----------------------------------------------------------------------------------


def test_new_topics_have_partition_counts() -> None:
    for topic in (topics.KNOWLEDGE, topics.WORKFLOWS, topics.RELIABILITY):
        assert topics.PARTITIONS[topic] >= 1
    assert len({topics.KNOWLEDGE, topics.WORKFLOWS, topics.RELIABILITY}) == 3


# -- knowledge -------------------------------------------------------------------------------


def test_knowledge_body_becomes_a_contract_without_thread() -> None:
    event = knowledge_submitted(
        doc(threadId="t1", key="handbook", source="file", metadata={"team": "ops"}), now=NOW
    )
    assert event.scope == Scope.parse({"agentWallet": AGENT, "userAddress": "U1"})
    assert event.content == "Handbook text."
    assert (event.key, event.uri, event.source_format) == ("handbook", None, "file")
    assert event.metadata == {"team": "ops"}
    assert event.occurred_at == NOW
    assert KnowledgeSubmitted.model_validate_json(event.model_dump_json()) == event


def test_knowledge_content_is_kept_verbatim_and_format_defaults_to_paste() -> None:
    event = knowledge_submitted(doc(content="  line one\nline two  ", sourceFormat="url"))
    assert event.content == "  line one\nline two  "
    assert event.source_format == "url"
    assert knowledge_submitted(doc(embedding=[0.1, 0.2])).source_format == "paste"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"content": "x"}, "agentWallet is required"),
        (doc(content=None), "content is required"),
        (doc(content="   \n"), "content is required"),
        (doc(content=42), "content is required"),
        (doc(source="ftp"), "source must be one of file, url, paste"),
        (doc(occurredAt="yesterday"), "occurredAt must be"),
    ],
)
def test_bad_knowledge_bodies_are_rejected(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        knowledge_submitted(body)


def test_knowledge_size_limits() -> None:
    knowledge_submitted(doc(content="a" * MAX_DOCUMENT_CHARS))
    with pytest.raises(ScopeError, match="content"):
        knowledge_submitted(doc(content="a" * (MAX_DOCUMENT_CHARS + 1)))
    with pytest.raises(ScopeError, match="key"):
        knowledge_submitted(doc(key="k" * 513))
    with pytest.raises(ValidationError):
        KnowledgeSubmitted.model_validate(
            {"scope": {"agentWallet": AGENT}, "content": "x", "unknown": 1}
        )
    event = knowledge_submitted(doc())
    with pytest.raises(ValidationError):
        event.content = "changed"  # type: ignore[misc]


async def test_the_edge_names_the_rows_the_knowledge_group_stores() -> None:
    text = "\n".join(f"Paragraph {i}: " + "words " * 40 for i in range(20))
    event = knowledge_submitted(doc(content=text, key="manual", threadId="t9"))
    memory = InMemoryMemoryStore()
    stored = await index_document(
        memory,
        HashingEmbedder(),
        scope=rows_scope(event.scope),
        content=event.content,
        key=event.key,
        source_format=event.source_format,
        uri=event.uri,
        at=to_ms(event.occurred_at),
    )
    assert len(stored) > 1
    assert chunk_ids(rows_scope(event.scope), event.content, event.key, event.uri) == stored
    other = knowledge_submitted(doc(content=text, key="manual", userAddress="U2"))
    assert set(chunk_ids(rows_scope(other.scope), text, "manual", None)).isdisjoint(stored)


# -- workflow checkpoints --------------------------------------------------------------------


def test_checkpoint_body_with_reference_aliases() -> None:
    event = checkpoint_recorded(cp(mode="global"), now=NOW)
    assert event.scope == Scope.parse(
        {"agentWallet": "0xFlow", "userAddress": "U1", "threadId": "run-1"}
    )
    assert event.scope.mode is None  # workflow rows have no mode
    assert (event.agent, event.type, event.step) == ("planner", "step_learning", 2)
    assert (event.success, event.quality_score) == (True, 0.8)
    assert [m.role for m in event.messages] == ["user", "assistant"]
    assert WorkflowCheckpointRecorded.model_validate_json(event.model_dump_json()) == event


def test_agent_wallet_wins_over_the_workflow_wallet_alias() -> None:
    event = checkpoint_recorded(cp(agentWallet="0xOwn"))
    assert event.scope.agent_wallet == "0xOwn"


def test_checkpoint_values_are_normalised() -> None:
    event = checkpoint_recorded(
        cp(
            success="TRUE",
            qualityScore=1,
            step=" s-3 ",
            messages=[{"role": "user", "content": "  "}, {"role": "system", "content": "x"}],
        )
    )
    assert event.success is True
    assert event.quality_score == 1.0
    assert event.step == "s-3"
    assert [m.content for m in event.messages] == ["x"]
    goal_only = checkpoint_recorded(cp(type="context_compaction", messages=[], goal="Ship v2"))
    assert goal_only.goal == "Ship v2"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"workflowWallet": None}, "agentWallet is required"),
        ({"run_id": None}, "runId is required"),
        ({"mode": "local", "haiId": "h1"}, "no local mode"),
        ({"agent": ""}, "agent is required"),
        ({"agent": " planner"}, "agent: must not start or end with whitespace"),
        ({"runId": "r1 "}, "runId: must not start or end with whitespace"),
        (
            {"workflowWallet": None, "agentWallet": None, "workflow_wallet": "0xF\t"},
            "workflow_wallet: must not",
        ),
        ({"type": "consolidate"}, "type must be one of"),
        ({"messages": [], "goal": None}, "needs a user/assistant/system message or a goal"),
        ({"messages": [{"role": "tool", "content": "out"}]}, "needs a user/assistant/system"),
        ({"messages": [{"role": "robot", "content": "x"}]}, r"messages\[0\].role is invalid"),
        ({"messages": "hi"}, "messages must be an array"),
        ({"success": "yes"}, "success must be a boolean"),
        ({"qualityScore": float("nan")}, "qualityScore must be a finite number"),
        ({"qualityScore": True}, "qualityScore must be a finite number"),
        ({"step": 1.5}, "step must be a number or a string"),
        ({"goal": 7}, "goal must be a string"),
    ],
)
def test_bad_checkpoint_bodies_are_rejected(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        checkpoint_recorded(cp(**fields))


def test_checkpoint_contract_guards_what_the_parser_checks() -> None:
    base: dict[str, Any] = {
        "scope": {"agentWallet": "0xFlow", "threadId": "run-1"},
        "agent": "planner",
        "type": "workflow_evaluation",
        "goal": "done",
    }
    WorkflowCheckpointRecorded.model_validate(base)
    for bad in (
        {"scope": {"agentWallet": "0xFlow"}},
        {"scope": {"agentWallet": "0xFlow", "threadId": "r", "mode": "local", "haiId": "h"}},
        {"goal": "  "},
        {"quality_score": float("inf")},
        {"step": 2**63},
        {"agent": "a" * 201},
        {"messages": [{"role": "user", "content": "x"}] * 201},
    ):
        with pytest.raises(ValidationError):
            WorkflowCheckpointRecorded.model_validate({**base, **bad})


async def test_a_checkpoint_sent_twice_is_one_row() -> None:
    first = checkpoint_recorded(cp(), now=NOW)
    again = checkpoint_recorded(cp(), now=NOW)
    assert first.event_id != again.event_id
    assert checkpoint_id(checkpoint_of(first)) == checkpoint_id(checkpoint_of(again))
    assert checkpoint_id(checkpoint_of(checkpoint_recorded(cp(step=3)))) != checkpoint_id(
        checkpoint_of(first)
    )
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    for event in (first, again, first):
        stored = await record_checkpoint(
            memory, embedder, checkpoint_of(event), to_ms(event.occurred_at)
        )
        assert stored == checkpoint_id(checkpoint_of(first))


# -- reliability -----------------------------------------------------------------------------


def test_reliability_request_bounds_and_reply_defaults() -> None:
    scope = Scope.parse({"agentWallet": "0xFlow", "userAddress": "U1"})
    assert ReliabilityRequest(scope=scope, agent="planner").last == 50
    for bad in ({"agent": ""}, {"last": 0}, {"last": 501}, {"extra": 1}):
        with pytest.raises(ValidationError):
            ReliabilityRequest.model_validate({"scope": scope, "agent": "planner", **bad})
    reply = ReliabilityReply()
    assert (reply.runs, reply.graded, reply.success_rate, reply.avg_quality, reply.error) == (
        0,
        0,
        0.0,
        0.0,
        None,
    )
