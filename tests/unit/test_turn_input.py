"""The post_turn body as one model (`schemas.turn_input.TurnInput`, issue 33): the SDK's
parser is the model, with the gateway's types, and its refusals keep the reference's one-line
messages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from schemas import inputs
from schemas.bodies import SCOPE_ALIASES, Body, parse_body
from schemas.bounds import MAX_TIME_MS, ValueOutOfRange
from schemas.context_input import ContextInput
from schemas.events import TurnRecorded
from schemas.remember_input import RememberInput
from schemas.scope import ScopeError
from schemas.transcripts import transcript_turns
from schemas.turn_input import MessageInput, TurnInput

NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_MS = 1_704_164_645_000


def pair(**extra: Any) -> dict[str, Any]:
    return {
        "agentWallet": "0xAgent",
        "threadId": "T1",
        "userMessage": "hello",
        "assistantMessage": "hi there",
        **extra,
    }


def test_turn_recorded_is_the_model_s_event() -> None:
    body = pair(
        toolEvents=[{"toolName": "search", "input": {"q": "x"}, "output": "y" * 3000}],
        tokenCount=12,
        model="  gpt  ",
        occurredAt="2024-01-02T03:04:05Z",
    )
    event = inputs.turn_recorded(body)
    assert event == TurnInput.model_validate(body).recorded().model_copy(
        update={"event_id": event.event_id}
    )
    assert event.occurred_at == NOW
    assert event.total_tokens == 12
    assert event.model_used == "gpt"
    [tool] = event.tool_events
    assert (tool.name, tool.args, len(tool.result or ""), tool.timestamp) == (
        "search",
        {"q": "x"},
        2000,
        NOW_MS,
    )


@pytest.mark.parametrize(
    ("aliases", "field", "expected"),
    [
        ({"modelUsed": "  ", "model": "m2"}, "model_used", "m2"),
        ({"totalTokens": None, "tokenCount": 7}, "total_tokens", 7),
        ({"toolEvents": None, "tool_events": [{"tool": "t"}]}, "tool_events", 1),
        ({"agentWallet": "", "agent_id": "0xB"}, "agent_wallet", "0xB"),
        ({"occurredAt": None, "occurred_at": NOW_MS}, "occurred_at", NOW_MS),
    ],
)
def test_the_first_alias_present_wins(aliases: dict[str, Any], field: str, expected: Any) -> None:
    body = TurnInput.model_validate(pair(**aliases))
    value = getattr(body, field)
    assert (len(value) if isinstance(value, list) else value) == expected


@pytest.mark.parametrize(
    ("extra", "message"),
    [  # the gateway refused each of these; the SDK ignored them (issue 33: one parser)
        ({"messages": "nope"}, r"^messages: Input should be a valid list"),
        ({"summary": 42}, r"^summary: Input should be a valid string"),
        (
            {"toolEvents": [{"name": "t", "result": {"rows": 3}}]},
            r"^toolEvents\[0\]\.result: Input should be a valid string",
        ),
        (
            {"messages": [{"role": "user", "content": "x", "toolCalls": "call"}]},
            r"^messages\[0\]\.toolCalls: Input should be a valid list",
        ),
        ({"userAddress": 7}, r"^userAddress: Input should be a valid string"),
    ],
)
def test_the_sdk_refuses_what_the_gateway_refuses(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        inputs.turn_recorded(pair(**extra), now=NOW)


@pytest.mark.parametrize(
    ("extra", "kind", "message"),
    [
        ({"totalTokens": 1.5}, ValueOutOfRange, r"^totalTokens must be a whole number, not 1.5$"),
        ({"contextWindow": "big"}, ScopeError, r"^contextWindow must be a whole number$"),
        ({"sessionId": " s"}, ScopeError, r"^sessionId: must not start or end with whitespace$"),
        (
            {"messages": [{"role": "user", "content": "x", "timestamp": True}]},
            ScopeError,
            r"^messages\[0\]\.timestamp must be an ISO-8601 time or milliseconds$",
        ),
        ({"occurred_at": -1}, ValueOutOfRange, r"^occurred_at must be a time from 0"),
    ],
)
def test_refusals_name_the_key_that_was_sent(
    extra: dict[str, Any], kind: type[ScopeError], message: str
) -> None:
    with pytest.raises(kind, match=message) as refused:
        inputs.turn_recorded(pair(**extra), now=NOW)
    assert type(refused.value) is kind


def test_a_message_timestamp_may_be_an_iso_time() -> None:
    body = pair(messages=[{"role": "user", "content": "hi", "timestamp": "2024-01-02T03:04:05Z"}])
    assert inputs.turn_recorded(body).messages[0].timestamp == NOW_MS


def test_a_message_parsed_alone_is_refused_under_the_given_root() -> None:
    with pytest.raises(ScopeError, match=r"^messages\[3\]\.role is invalid$"):
        parse_body(MessageInput, {"role": "robot", "content": "x"}, "messages[3]")


def test_the_schema_documents_the_aliases() -> None:
    schema = TurnInput.model_json_schema()
    props = schema["properties"]
    assert "tool_events" in props["toolEvents"]["description"]
    assert "tokenCount" in props["totalTokens"]["description"]
    assert "agent_id" in props["agentWallet"]["description"]
    assert {"sessionId", "turnId", "occurredAt", "userMessage"} <= set(props)


@pytest.mark.parametrize(
    "item",
    [
        "hi",
        {"role": "robot", "content": "x"},
        {"role": "user", "content": "x", "name": " "},
        {"role": "user", "content": "x", "raw": ""},
        {"role": "user", "content": "x", "toolCalls": "call"},
        {"role": "user", "content": 7},
        {"role": "user", "content": "x", "timestamp": -1},
    ],
)
def test_a_transcript_refuses_a_message_as_a_turn_does(item: object) -> None:
    """Message validation lives in one place (`MessageInput`): a transcript's messages are
    refused in the same words as a turn's (the transcript ignored a bad name, raw, toolCalls
    or content before issue 33)."""
    messages = [{"role": "user", "content": "a"}, item]
    with pytest.raises(ScopeError) as turn:
        inputs.turn_recorded(pair(messages=messages), now=NOW)
    with pytest.raises(ScopeError) as transcript:
        transcript_turns(pair(sessionId="s1", messages=messages), now=NOW)
    assert (type(transcript.value), str(transcript.value)) == (type(turn.value), str(turn.value))


def test_the_event_made_without_a_second_pass_is_what_its_contract_reads_back() -> None:
    """`TurnInput.recorded` makes `TurnRecorded` with `model_construct` (issue 33: no second
    validation): every field it sets must be one the contract accepts from the wire."""
    body = pair(
        messages=[
            {"role": "user", "content": " hi ", "name": " Noa ", "timestamp": NOW_MS - 5},
            {"role": "assistant", "content": "yo", "toolCalls": [{"name": "t", "args": {}}]},
        ],
        toolEvents=[{"tool": "search", "input": {"q": 1}, "status": "ok"}],
        metadata={"source": "unit"},
        contextWindow=8000,
        mode="local",
        haiId="h1",
    )
    event = inputs.turn_recorded(body, now=NOW)
    assert TurnRecorded.model_validate_json(event.model_dump_json()) == event
    assert (event.messages[0].content, event.messages[0].name) == ("hi", "Noa")


def test_a_turn_with_no_millisecond_left_for_its_messages_is_out_of_range() -> None:
    """The messages are timed `occurredAt` + their position: past the last millisecond a
    time can hold, the turn is refused (the contract would refuse its second message)."""
    with pytest.raises(ValueOutOfRange, match=r"^occurredAt leaves no millisecond"):
        inputs.turn_recorded(pair(occurredAt=MAX_TIME_MS))
    assert inputs.turn_recorded(pair(occurredAt=MAX_TIME_MS - 1)).messages[1].timestamp == (
        MAX_TIME_MS
    )


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (TurnInput, pair(toolEvents=[{"name": "t"}])),
        (RememberInput, {"agentWallet": "0xAgent", "fact": "tea"}),
        (ContextInput, {"agentWallet": "0xAgent", "query": "q"}),
    ],
)
def test_every_body_model_takes_its_aliases_from_one_table(model: type[Body], body: Any) -> None:
    """One alias step for every model (`Body._loose`, issue 33): a model's rows are its
    scope's plus its own, and the scope's rows come first."""
    assert model.ALIASES[: len(SCOPE_ALIASES)] == SCOPE_ALIASES
    assert "_loose" in model.__pydantic_decorators__.model_validators
    assert set(model.__pydantic_decorators__.model_validators) == {"_loose"}
    assert parse_body(model, body) is not None
