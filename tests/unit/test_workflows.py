"""Workflow checkpoints and agent reliability (reference §14) with in-memory ports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import HashingEmbedder, InMemoryMemoryStore
from engine.errors import InputRejected
from engine.ingest.workflows import (
    Reliability,
    WorkflowCheckpoint,
    WorkflowMessage,
    checkpoint_content,
    record_checkpoint,
    reliability,
)
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter

WALLET = "0xWorkflow"
AT = 1_589_716_800_000


def msg(role: str, content: str) -> WorkflowMessage:
    return WorkflowMessage(role, content)


def checkpoint(**fields: Any) -> WorkflowCheckpoint:
    base: dict[str, Any] = {
        "workflow_wallet": WALLET,
        "run_id": "run-1",
        "user_id": "U1",
        "agent": "planner",
        "type": "step_learning",
        "messages": (msg("user", "Plan the release"), msg("assistant", "Three steps")),
        "step": 2,
        "success": True,
        "quality_score": 0.8,
    }
    return WorkflowCheckpoint(**{**base, **fields})


# -- content ---------------------------------------------------------------------------------


def test_content_keeps_last_six_user_assistant_system_messages() -> None:
    messages = [
        msg("system", "You are the planner"),
        msg("user", "first"),
        msg("tool", "tool output is never part of it"),
        msg("assistant", "second"),
        msg("user", "   "),
        msg("user", "third\n   with   spaces"),
        msg("assistant", "fourth"),
        msg("user", "fifth"),
        msg("assistant", "sixth"),
    ]
    assert checkpoint_content(messages) == "\n".join(
        [
            "user: first",
            "assistant: second",
            "user: third with spaces",
            "assistant: fourth",
            "user: fifth",
            "assistant: sixth",
        ]
    )
    assert checkpoint_content(messages[:2]) == "system: You are the planner\nuser: first"


def test_content_clips_each_message_and_the_total() -> None:
    one = checkpoint_content([msg("assistant", "a" * 700)])
    assert one == "assistant: " + "a" * 600
    many = checkpoint_content([msg("user", str(i) * 700) for i in range(6)])
    assert len(many) == 1800
    assert many.startswith("user: " + "0" * 600 + "\nuser: " + "1" * 600)
    assert checkpoint_content([]) == ""


# -- record_checkpoint -----------------------------------------------------------------------


async def test_record_checkpoint_stores_a_scoped_turn_row_once() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    cp = checkpoint()
    vector_id = await record_checkpoint(memory, embedder, cp, AT)
    assert await record_checkpoint(memory, embedder, cp, AT + 5) == vector_id

    rows = await memory.active_rows(TenantFilter(WALLET, "U1"))
    assert [r.vector_id for r in rows] == [vector_id]
    [row] = rows
    assert row.source == "session"
    assert row.created_at == AT
    assert row.content == "user: Plan the release\nassistant: Three steps"
    assert row.scope == ScopeFields(
        agent_wallet=WALLET, user_address="U1", thread_id="run-1", mode=None, hai_id=None
    )
    assert row.metadata == {
        "type": "step_learning",
        "workflow_wallet": WALLET,
        "run_id": "run-1",
        "user_id": "U1",
        "agent": "planner",
        "step": 2,
        "success": True,
        "qualityScore": 0.8,
    }
    # no mode: a global read of the workflow wallet sees it
    assert await memory.active_rows(TenantFilter(WALLET, "U1", mode="global")) == rows


async def test_distinct_checkpoints_are_distinct_rows() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    ids = {
        await record_checkpoint(memory, embedder, checkpoint(), AT),
        await record_checkpoint(memory, embedder, checkpoint(step=3), AT),
        await record_checkpoint(memory, embedder, checkpoint(type="workflow_evaluation"), AT),
        await record_checkpoint(memory, embedder, checkpoint(run_id="run-2"), AT),
    }
    assert len(ids) == 4


async def test_goal_is_the_content_when_no_message_qualifies() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    cp = checkpoint(
        type="context_compaction",
        messages=(msg("tool", "ignored"),),
        goal="  Ship v2 " + "g" * 700,
        success=None,
        quality_score=None,
    )
    await record_checkpoint(memory, embedder, cp, AT)
    [row] = await memory.active_rows(TenantFilter(WALLET, "U1"))
    assert row.content == "goal: " + ("Ship v2 " + "g" * 700)[:600]
    assert row.metadata["goal"] == ("Ship v2 " + "g" * 700)[:600]
    assert row.metadata["success"] is None
    assert row.metadata["qualityScore"] is None
    with pytest.raises(InputRejected):
        await record_checkpoint(memory, embedder, checkpoint(messages=(), goal=None), AT)


def test_checkpoint_type_and_ids_are_checked() -> None:
    with pytest.raises(InputRejected):
        checkpoint(type="other")
    with pytest.raises(InputRejected):
        checkpoint(run_id="")


# -- reliability -----------------------------------------------------------------------------


def row(i: int, **metadata: Any) -> MemoryRow:
    return MemoryRow(
        vector_id=f"wf_{i:03d}",
        scope=ScopeFields(WALLET, "U1", "run-1", None, None),
        content=f"checkpoint {i}",
        embedding=np.zeros(4, dtype=np.float32),
        embedding_model="test",
        source="session",
        created_at=AT + i,
        metadata=metadata,
    )


def test_reliability_worked_example() -> None:
    rows = [
        row(1, type="step_learning", agent="planner", success=True, qualityScore=0.9),
        row(2, type="workflow_evaluation", agent="planner", success="true", qualityScore=0.6),
        row(3, type="step_learning", agent="planner", success=False, qualityScore="0.99"),
        row(4, type="step_learning", agent="planner", success=None, qualityScore=None),
        row(5, type="workflow_evaluation", agent="planner", success=1, qualityScore=0.3),
        row(6, type="step_learning", agent="planner", success="TRUE", qualityScore=True),
        row(7, type="context_compaction", agent="planner", success=True, qualityScore=1.0),
        row(8, type="step_learning", agent="coder", success=True, qualityScore=1.0),
        row(9, agent="planner", success=True, qualityScore=1.0),
    ]
    # counted: rows 1-6; graded: 1 (True), 2 ("true"), 3 (False) — None, 1 and "TRUE" are no
    # success value; successes: 1 and 2; numeric scores 0.9, 0.6, 0.3
    result = reliability(rows, "planner")
    assert (result.runs, result.graded) == (6, 3)
    assert result.success_rate == pytest.approx(2 / 3)
    assert result.avg_quality == pytest.approx(0.6)
    assert reliability(rows, "coder") == Reliability(1, 1, 1.0, 1.0)
    assert reliability(rows, "nobody") == Reliability(0, 0, 0.0, 0.0)
    assert reliability([], "planner") == Reliability(0, 0, 0.0, 0.0)


def test_a_checkpoint_without_a_success_value_is_not_a_failed_run() -> None:
    # issue 17: four evaluations (three succeeded) and a step learning never judged gave
    # 3/5 = 0.6; the rate is over the four graded runs
    rows = [
        *(row(i, type="workflow_evaluation", agent="planner", success=i != 2) for i in range(4)),
        row(4, type="step_learning", agent="planner", qualityScore=0.8),
        row(5, type="step_learning", agent="planner", success="false"),
    ]
    assert reliability(rows[:5], "planner") == Reliability(5, 4, 0.75, 0.8)
    assert reliability(rows, "planner") == Reliability(6, 5, 0.6, 0.8)  # "false" is graded
    ungraded = [row(9, type="step_learning", agent="planner", success=None)]
    assert reliability(ungraded, "planner") == Reliability(1, 0, 0.0, 0.0)


def test_reliability_uses_the_newest_fifty_rows() -> None:
    # oldest 10 succeeded, newest 50 failed; quality i/100
    rows = [
        row(i, type="step_learning", agent="planner", success=i < 10, qualityScore=i / 100)
        for i in range(60)
    ]
    rows.reverse()  # input order does not matter
    result = reliability(rows, "planner")
    assert result.runs == 50
    assert result.success_rate == 0.0
    assert result.avg_quality == pytest.approx(sum(range(10, 60)) / 50 / 100)
    assert reliability(rows, "planner", last=5).avg_quality == pytest.approx(0.57)
    assert reliability(rows, "planner", last=60).success_rate == pytest.approx(10 / 60)


async def test_reliability_over_recorded_checkpoints() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    outcomes = [(True, 0.9), (False, 0.4), (True, None), (None, 0.5)]
    for step, (success, quality) in enumerate(outcomes):
        await record_checkpoint(
            memory,
            embedder,
            checkpoint(step=step, success=success, quality_score=quality),
            AT + step,
        )
    await record_checkpoint(
        memory,
        embedder,
        checkpoint(type="workflow_evaluation", success=True, quality_score=1.0),
        AT,
    )
    rows = await memory.active_rows(TenantFilter(WALLET, "U1"), sources=["session"])
    result = reliability(rows, "planner")
    assert (result.runs, result.graded) == (5, 4)  # the step stored without success: ungraded
    assert result.success_rate == pytest.approx(3 / 4)
    assert result.avg_quality == pytest.approx((0.9 + 0.4 + 0.5 + 1.0) / 4)
