"""`schemas.transcripts`: a transcripts/index body → one turn per exchange, with turn ids
that do not depend on the clock (re-indexing is idempotent, §16.11)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from schemas.events import MAX_MESSAGES
from schemas.scope import ScopeError
from schemas.transcripts import MAX_TRANSCRIPT_MESSAGES, transcript_turns

NOW = datetime(2026, 1, 2, tzinfo=UTC)
BODY = {
    "agentWallet": "0xA",
    "userAddress": "u",
    "sessionId": "s1",
    "threadId": "t1",
    "tokenCount": 40,
    "modelUsed": "m1",
    "messages": [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "timestamp": 1_700_000_000_000},
        {"role": "user", "content": "I moved to Porto"},
        {"role": "user", "content": "in May"},
        {"role": "tool", "content": "tool:calendar status:ok"},
        {"role": "assistant", "content": "noted"},
    ],
}


def test_exchanges_start_at_a_user_message_after_an_answer() -> None:
    turns = transcript_turns(BODY, now=NOW)
    assert [[m.content for m in t.messages] for t in turns] == [
        ["be kind", "hi", "hello"],
        ["I moved to Porto", "in May", "tool:calendar status:ok", "noted"],
    ]
    first, second = turns
    assert (first.session_id, first.thread_id, first.scope.user_address) == ("s1", "t1", "u")
    assert (first.total_tokens, second.total_tokens) == (40, 0)  # counted once
    assert first.model_used == "m1"
    assert first.metadata == {"indexedFrom": "transcripts/index", "messageIndex": 0}
    assert second.metadata["messageIndex"] == 3
    # a given timestamp is kept; the others follow the transcript's order
    assert first.messages[2].timestamp == 1_700_000_000_000
    assert second.occurred_at > NOW


@pytest.mark.parametrize(
    "aliases",
    [
        {"agent_id": "0xA", "user_id": "u", "thread_id": "t1"},
        {"agent_wallet": "0xA", "user_address": "u", "run_id": "t1"},
    ],
)
def test_every_scope_alias_reaches_each_turn(aliases: dict[str, str]) -> None:
    """A user given by an alias must stay on every exchange's turn: dropping it would store
    that user's transcript as user-less memory, readable by every user-less query."""
    body = {k: v for k, v in BODY.items() if k not in ("agentWallet", "userAddress", "threadId")}
    turns = transcript_turns({**body, **aliases}, now=NOW)
    assert turns
    assert {(t.scope.agent_wallet, t.scope.user_address, t.thread_id) for t in turns} == {
        ("0xA", "u", "t1")
    }


def test_turn_ids_ignore_the_clock_and_follow_the_tenant_fixes_16_11() -> None:
    ids = [t.turn_id for t in transcript_turns(BODY, now=NOW)]
    assert ids == [t.turn_id for t in transcript_turns(BODY, now=datetime(2027, 1, 1, tzinfo=UTC))]
    other_user = [t.turn_id for t in transcript_turns({**BODY, "userAddress": "v"}, now=NOW)]
    assert set(ids).isdisjoint(other_user)
    grown = {**BODY, "messages": [*BODY["messages"], {"role": "user", "content": "more"}]}
    assert [t.turn_id for t in transcript_turns(grown, now=NOW)][:2] == ids


def test_no_user_or_assistant_text_is_nothing_to_index() -> None:
    silent = [{"role": "system", "content": "x"}, {"role": "user", "content": ""}]
    body = {**BODY, "messages": silent}
    assert transcript_turns(body, now=NOW) == []


def test_long_exchanges_are_cut_and_long_transcripts_refused() -> None:
    many = [{"role": "user", "content": f"m{i}"} for i in range(MAX_MESSAGES + 5)]
    turns = transcript_turns({**BODY, "messages": many}, now=NOW)
    assert [len(t.messages) for t in turns] == [MAX_MESSAGES, 5]
    too_many = [{"role": "user", "content": "x"}] * (MAX_TRANSCRIPT_MESSAGES + 1)
    with pytest.raises(ScopeError, match="at most"):
        transcript_turns({**BODY, "messages": too_many}, now=NOW)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sessionId": ""}, "sessionId is required"),
        ({"sessionId": " s1"}, "sessionId: must not start or end with whitespace"),
        ({"threadId": None}, "threadId is required"),
        ({"messages": {}}, "messages must be a non-empty array"),
        ({"messages": ["x"]}, "messages[0] must be an object"),
        ({"rememberWorkingMemory": False}, "rememberWorkingMemory must be true"),
    ],
)
def test_bad_bodies(change: dict[str, object], message: str) -> None:
    body = {k: v for k, v in {**BODY, **change}.items() if v is not None}
    with pytest.raises(ScopeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        transcript_turns(body, now=NOW)
