"""post_turn persistence through the engine with in-memory ports (reference §7.1-§7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryMemoryStore,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.turns import (
    IngestPolicy,
    TurnRecorder,
    compact_summary,
    turn_messages,
    turn_row_id_of,
)
from engine.records import MemoryRow, StoredMessage, Transcript, WorkingBuffer
from engine.scoping import TenantFilter
from schemas.events import TurnRecorded
from schemas.ids import to_ms
from schemas.inputs import turn_recorded

AGENT = "0xAgent"
T0 = datetime(2020, 5, 17, 12, 0, tzinfo=UTC)
"""Far from the wall clock, so a derived timestamp taken from `now()` would show."""
T0_MS = to_ms(T0)


@dataclass
class Engine:
    transcripts: InMemoryTranscriptStore
    working: InMemoryWorkingStore
    memory: InMemoryMemoryStore
    embedder: HashingEmbedder
    recorder: TurnRecorder


@pytest.fixture
def engine() -> Engine:
    transcripts, working = InMemoryTranscriptStore(), InMemoryWorkingStore()
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    return Engine(
        transcripts, working, memory, embedder, TurnRecorder(transcripts, working, memory, embedder)
    )


def event(at: datetime = T0, **body: Any) -> TurnRecorded:
    base: dict[str, Any] = {"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1"}
    if "messages" not in body:
        base |= {"userMessage": "I moved to Lisbon", "assistantMessage": "Noted, Lisbon it is"}
    return turn_recorded({**base, **body}, now=at)


def turn_pair(i: int, at: datetime) -> TurnRecorded:
    return event(at, userMessage=f"question {i}", assistantMessage=f"answer {i}")


def everyone(user: str | None = "U1") -> TenantFilter:
    return TenantFilter(agent_wallet=AGENT, user_address=user)


async def transcripts(e: Engine) -> list[Transcript]:
    return await e.transcripts.recent(everyone(), 100)


async def sessions(e: Engine) -> list[WorkingBuffer]:
    return await e.working.recent(everyone(), 100)


async def rows(e: Engine) -> list[MemoryRow]:
    return await e.memory.active_rows(everyone())


def row_view(r: MemoryRow) -> tuple[Any, ...]:
    return (
        r.vector_id,
        r.scope,
        r.content,
        r.embedding.tobytes(),
        r.embedding_model,
        r.source,
        r.created_at,
        r.metadata,
        r.decay_score,
        r.access_count,
    )


async def snapshot(e: Engine) -> tuple[Any, ...]:
    return (
        await transcripts(e),
        await sessions(e),
        sorted(row_view(r) for r in await rows(e)),
    )


# --- transcript ----------------------------------------------------------------------------


async def test_transcript_is_appended_across_turns_not_overwritten_fixes_16_11(
    engine: Engine,
) -> None:
    await engine.recorder.record(turn_pair(1, T0))
    await engine.recorder.record(turn_pair(2, T0 + timedelta(minutes=1)))

    [transcript] = await transcripts(engine)
    assert [m.content for m in transcript.messages] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert transcript.session_id == f"session:global:{AGENT}:T1"
    assert transcript.created_at == T0_MS
    assert transcript.updated_at == T0_MS + 60_000


async def test_transcript_messages_are_sorted_by_timestamp(engine: Engine) -> None:
    messages = [
        {"role": "assistant", "content": "second", "timestamp": T0_MS + 20},
        {"role": "user", "content": "first", "timestamp": T0_MS + 10},
        {"role": "system", "content": "third", "timestamp": T0_MS + 30},
    ]
    await engine.recorder.record(event(messages=messages))
    [transcript] = await transcripts(engine)
    assert [m.content for m in transcript.messages] == ["first", "second", "third"]


async def test_a_late_turn_with_older_timestamps_is_sorted_in(engine: Engine) -> None:
    await engine.recorder.record(turn_pair(2, T0 + timedelta(minutes=5)))
    await engine.recorder.record(turn_pair(1, T0))
    [transcript] = await transcripts(engine)
    assert [m.content for m in transcript.messages] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert (transcript.created_at, transcript.updated_at) == (T0_MS, T0_MS + 300_000)


async def test_tool_events_become_tool_messages_with_tool_calls(engine: Engine) -> None:
    tool_events = [
        {"name": "weather", "args": {"city": "Lisbon"}, "result": "sunny", "timestamp": T0_MS + 5},
        {"toolName": "noop", "status": "failed", "timestamp": T0_MS + 6},
    ]
    messages = [
        {"role": "user", "content": "weather?", "timestamp": T0_MS},
        {"role": "assistant", "content": "sunny", "timestamp": T0_MS + 10},
    ]
    await engine.recorder.record(event(messages=messages, toolEvents=tool_events))

    [transcript] = await transcripts(engine)
    assert [(m.role, m.content, m.tool_calls) for m in transcript.messages] == [
        ("user", "weather?", None),
        (
            "tool",
            "tool:weather status:unknown result:sunny",  # reported without a status
            [{"name": "weather", "args": {"city": "Lisbon"}}],
        ),
        ("tool", "tool:noop status:failed", [{"name": "noop", "args": {}}]),
        ("assistant", "sunny", None),
    ]


def test_message_tool_calls_are_kept_as_dicts() -> None:
    messages = [
        {
            "role": "assistant",
            "content": "calling",
            "timestamp": 1,
            "toolCalls": [{"name": "search", "args": {"q": "x"}}],
        }
    ]
    [message] = turn_messages(event(messages=messages))
    assert message.tool_calls == [{"name": "search", "args": {"q": "x"}}]


# --- working buffer ------------------------------------------------------------------------


async def test_working_keeps_the_newest_12_lines_newest_first_fixes_16_9(engine: Engine) -> None:
    for i in range(1, 8):  # 14 lines
        await engine.recorder.record(turn_pair(i, T0 + timedelta(minutes=i)))

    [session] = await sessions(engine)
    expected = []
    for i in range(7, 1, -1):
        expected += [f"assistant: answer {i}", f"user: question {i}"]
    assert session.lines == expected
    assert len(session.lines) == 12


async def test_working_excludes_tool_and_system_lines(engine: Engine) -> None:
    messages = [
        {"role": "system", "content": "you are helpful", "timestamp": T0_MS},
        {"role": "user", "content": "hi", "timestamp": T0_MS + 1},
        {"role": "tool", "content": "tool output", "timestamp": T0_MS + 2},
        {"role": "assistant", "content": "hello", "timestamp": T0_MS + 3},
    ]
    await engine.recorder.record(event(messages=messages, toolEvents=[{"name": "t"}]))
    [session] = await sessions(engine)
    assert session.lines == ["assistant: hello", "user: hi"]


async def test_working_lines_are_cut_to_1000_chars(engine: Engine) -> None:
    await engine.recorder.record(event(userMessage="x" * 1500, assistantMessage="ok"))
    [session] = await sessions(engine)
    assert session.lines[1] == ("user: " + "x" * 1500)[:1000]


async def test_working_uses_the_thread_session_even_with_an_explicit_session_id(
    engine: Engine,
) -> None:
    stored = await engine.recorder.record(event(sessionId="run-42"))
    assert stored.session_id == "run-42"
    assert stored.working_session_id == f"session:global:{AGENT}:T1"
    [session] = await sessions(engine)
    assert session.session_id == f"session:global:{AGENT}:T1"
    assert session.state["lastSessionId"] == "run-42"
    [transcript] = await transcripts(engine)
    assert transcript.session_id == "run-42"


# --- idempotency and event time ------------------------------------------------------------


async def test_recording_the_same_event_twice_changes_nothing(engine: Engine) -> None:
    first_event = event(toolEvents=[{"name": "t", "result": "r"}], totalTokens=7)
    first = await engine.recorder.record(first_event)
    before = await snapshot(engine)

    again = await engine.recorder.record(first_event)
    assert await snapshot(engine) == before
    assert (first.transcript_applied, first.working_applied, first.vector_inserted) == (
        True,
        True,
        True,
    )
    assert (again.transcript_applied, again.working_applied, again.vector_inserted) == (
        False,
        False,
        False,
    )
    assert again.vector_id == first.vector_id


async def test_a_redelivered_copy_with_a_new_event_id_changes_nothing(engine: Engine) -> None:
    body = {"userMessage": "a", "assistantMessage": "b", "occurredAt": T0_MS}
    await engine.recorder.record(event(**body))
    before = await snapshot(engine)
    copy = turn_recorded({"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1", **body})
    await engine.recorder.record(copy)
    assert await snapshot(engine) == before


async def test_derived_timestamps_are_the_events_occurred_at(engine: Engine) -> None:
    await engine.recorder.record(event(at=T0))
    [transcript] = await transcripts(engine)
    [session] = await sessions(engine)
    [row] = await rows(engine)
    assert (transcript.created_at, transcript.updated_at) == (T0_MS, T0_MS)
    assert (session.created_at, session.last_accessed_at) == (T0_MS, T0_MS)
    assert session.state["lastTurnAt"] == T0_MS
    assert row.created_at == T0_MS


# --- session vector row --------------------------------------------------------------------


async def test_turn_row_carries_embedding_model_and_dimension(engine: Engine) -> None:
    e = event()
    stored = await engine.recorder.record(e)
    [row] = await rows(engine)
    assert row.vector_id == stored.vector_id == turn_row_id_of(e)
    assert row.source == "session"
    assert row.embedding_model == engine.embedder.model == "hashing-bow-256"
    assert row.embedding_dim == engine.embedder.dimension == 256
    assert row.embedding.dtype == np.float32
    assert np.isclose(np.linalg.norm(row.embedding), 1.0)
    assert row.content == "user: I moved to Lisbon\nassistant: Noted, Lisbon it is"
    assert (row.scope.agent_wallet, row.scope.user_address, row.scope.thread_id) == (
        AGENT,
        "U1",
        "T1",
    )
    [expected] = await engine.embedder.embed([row.content], "document")
    assert np.allclose(row.embedding, expected)


def test_turn_row_id_is_deterministic_per_turn() -> None:
    a = event(occurredAt=T0_MS)
    b = event(occurredAt=T0_MS)
    c = event(at=T0 + timedelta(seconds=1))
    assert turn_row_id_of(a) == turn_row_id_of(b)
    assert turn_row_id_of(a) != turn_row_id_of(c)
    assert turn_row_id_of(a).startswith("vec_")


async def test_explicit_summary_is_the_row_content(engine: Engine) -> None:
    await engine.recorder.record(event(summary="User lives in Lisbon"))
    [row] = await rows(engine)
    assert row.content == "User lives in Lisbon"
    [transcript] = await transcripts(engine)
    assert transcript.summary == "User lives in Lisbon"


async def test_caller_metadata_cannot_override_system_keys_fixes_16_27(engine: Engine) -> None:
    forged = {
        "type": "forged",
        "source": "forged",
        "layer": "forged",
        "status": "deleted",
        "contextId": "forged",
        "turnId": "forged",
        "sessionId": "forged",
        "app_id": "app-1",
    }
    e = event(metadata=forged, contextId="ctx-1")
    await engine.recorder.record(e)
    [row] = await rows(engine)  # still active: "status: deleted" was not taken
    assert row.metadata == {
        "app_id": "app-1",
        "type": "agent_memory_turn",
        "source": "agent_loop",
        "contextId": "ctx-1",
        "turnId": e.turn_id,
        "sessionId": e.session_id,
    }


# --- compact_summary (§7.1 step 6) ---------------------------------------------------------


def msg(role: str, content: str, ts: int = 0) -> StoredMessage:
    return StoredMessage(role=role, content=content, timestamp=ts)


def test_compact_summary_keeps_the_last_6_user_assistant_tool_messages() -> None:
    messages = [msg("user", f"m{i}", i) for i in range(8)] + [msg("system", "sys", 9)]
    assert compact_summary(messages).splitlines() == [f"user: m{i}" for i in range(2, 8)]


def test_compact_summary_cuts_tool_at_500_and_others_at_800() -> None:
    summary = compact_summary([msg("tool", "t" * 900), msg("assistant", "a" * 900)])
    tool_line, assistant_line = summary.splitlines()
    assert tool_line == "tool: " + "t" * 500
    assert assistant_line == "assistant: " + "a" * 800


def test_compact_summary_collapses_whitespace() -> None:
    assert compact_summary([msg("user", "  a \n\n b\t c  ")]) == "user: a b c"


def test_compact_summary_is_cut_to_1800_chars() -> None:
    summary = compact_summary([msg("user", "u" * 800) for _ in range(6)])
    assert len(summary) == 1800
    assert summary.startswith("user: " + "u" * 800 + "\nuser: ")


def test_compact_summary_honours_the_policy() -> None:
    policy = IngestPolicy(summary_messages=2, summary_chars=12)
    summary = compact_summary(
        [msg("user", "one"), msg("user", "two"), msg("user", "three")], policy
    )
    assert summary == "user: two\nus"


def test_compact_summary_of_system_only_is_empty() -> None:
    assert compact_summary([msg("system", "x")]) == ""


def test_a_messages_raw_form_is_stored_verbatim_and_never_shown() -> None:
    """issue 18 §3: `raw` (an agent framework's own item) reaches the stored message
    unchanged, stays out of the working lines and the summary, and a non-string one is
    refused before anything is published."""
    from engine.ingest.turns import compact_summary, turn_messages, working_lines
    from schemas.inputs import turn_recorded
    from schemas.scope import ScopeError

    scope = {"agentWallet": "0xA", "userAddress": "alice", "threadId": "t"}
    raw = '{"role": "user", "content": "  Hi there  "}'
    event = turn_recorded({**scope, "messages": [{"role": "user", "content": "Hi", "raw": raw}]})
    [stored] = turn_messages(event)
    assert stored.raw == raw
    assert working_lines([stored]) == ["user: Hi"]
    assert compact_summary([stored]) == "user: Hi"
    for bad in ({"k": 1}, "", 3):
        with pytest.raises(ScopeError, match=r"messages\[0\]\.raw"):
            turn_recorded({**scope, "messages": [{"role": "user", "content": "Hi", "raw": bad}]})
