"""Hostile input against the contracts and the loose-body parsers: every input is either
accepted into a valid frozen contract that round-trips through JSON (and, for what the edge
publishes, fits in one message), or rejected with the project's own error types
(`ScopeError`, pydantic's `ValidationError`, `InputRejected`); never another exception, never
a hang (each example has a deadline)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from faststream.kafka.annotations import KafkaMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from engine.errors import InputRejected
from schemas import topics
from schemas.callers import checkpoint_recorded, knowledge_submitted
from schemas.events import (
    MAX_CONTENT_CHARS,
    MAX_MESSAGES,
    FactsExtracted,
    JobRequested,
    KnowledgeSubmitted,
    MemoryChanged,
    MemoryRemembered,
    TurnRecorded,
    WorkflowCheckpointRecorded,
)
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.limits import (
    INT64_MAX,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    MAX_JSON_NODES,
    MAX_MESSAGE_BYTES,
)
from schemas.requests import (
    AdminRequest,
    ContextRequest,
    ItemRequest,
    LayerSearchRequest,
    ReliabilityRequest,
    RerankRequest,
    SessionRequest,
)
from schemas.scope import Scope, ScopeError
from schemas.transcripts import transcript_turns
from services.asyncapi import CHANNELS
from services.dlq import DeadLetter, consume

REJECTIONS = (ScopeError, ValidationError, InputRejected)
NOW = datetime(2024, 5, 1, tzinfo=UTC)
HOSTILE = settings(
    max_examples=150,
    deadline=10_000,  # ms: a validation that takes longer is a hang
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- strategies ----------------------------------------------------------------------------

SPECIAL = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",  # a lone surrogate: JSON can carry it escaped, UTF-8 cannot
    "\udfff\ud800",
    "\u202eevil\u202c",  # right-to-left override
    "שלום",
    "😀" * 3,
    "👩‍👩‍👧",
    "$where",
    "$ne",
    "a.b",
    ".",
    "metadata.status",
    "__proto__",
    "\n\t\r",
    "0xA1",
]
texts = st.one_of(
    st.sampled_from(SPECIAL),
    st.text(st.characters(exclude_categories=()), max_size=40),  # surrogates included
    st.tuples(st.sampled_from(["x", "😀", "\x00", '"']), st.integers(0, 40_000)).map(
        lambda pair: pair[0] * pair[1]
    ),
)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, INT64_MAX, INT64_MAX + 1, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)
    ),
    max_leaves=20,
)


def nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value} if kind == "dict" else [value]
    return value


deep = st.tuples(st.integers(1, 60), st.sampled_from(["dict", "list"])).map(lambda p: nested(*p))
wide = st.integers(0, 2 * MAX_JSON_NODES).map(lambda n: {f"k{i}": i for i in range(n)})
anything = st.one_of(json_values, deep, wide)

SCOPE = {"agentWallet": "0xA1", "userAddress": "u1", "threadId": "t1"}
SCOPE_KEYS = ["agentWallet", "agent_id", "userAddress", "user_id", "threadId", "run_id", "mode"]
SCOPE_KEYS += ["haiId", "hai_id", "filters", "metadata"]
TURN_KEYS = ["messages", "userMessage", "assistantMessage", "toolEvents", "sessionId", "turnId"]
TURN_KEYS += ["contextId", "summary", "totalTokens", "modelUsed", "contextWindow", "occurredAt"]
REMEMBER_KEYS = ["content", "fact", "type", "retention", "confidence", "conflictPolicy"]
REMEMBER_KEYS += ["scope", "metadata", "occurredAt"]
CONTEXT_KEYS = ["query", "layers", "limit", "maxItems", "maxItemChars", "budget", "includeRaw"]
CONTEXT_KEYS += ["maxContextCharacters", "asOf"]


def message(i: int, content: Any = "hello") -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": content}


messages = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"role": st.one_of(st.sampled_from(["user", "assistant", "tool"]), texts)},
            optional={
                "content": st.one_of(texts, anything),
                "timestamp": numbers,
                "toolCalls": st.one_of(
                    anything,
                    st.lists(st.fixed_dictionaries({"name": texts, "args": anything}), max_size=3),
                ),
            },
        ),
        max_size=5,
    ),
    st.tuples(st.integers(0, 2 * MAX_MESSAGES), texts).map(
        lambda p: [message(i, p[1] or "x") for i in range(p[0])]
    ),
)


def bodies(base: dict[str, Any], keys: list[str]) -> st.SearchStrategy[Any]:
    """A valid body with some keys replaced by hostile values, or something else entirely."""
    overrides = st.dictionaries(
        st.one_of(st.sampled_from(keys + SCOPE_KEYS), texts),
        st.one_of(anything, messages),
        max_size=4,
    )
    return st.one_of(
        overrides.map(lambda extra: {**base, **extra}),
        anything,
    )


# --- the property --------------------------------------------------------------------------


def accepted_or_rejected(parse: Callable[[Any], BaseModel], body: Any) -> BaseModel | None:
    """Run `parse`; on success check the contract is frozen and round-trips through JSON."""
    try:
        result = parse(body)
    except REJECTIONS as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        return None  # a rejection that says what is wrong
    wire = result.model_dump_json()
    again = type(result).model_validate_json(wire)
    assert again == result
    assert again.model_dump_json() == wire
    field = next(iter(type(result).model_fields))
    with pytest.raises(ValidationError):
        setattr(result, field, getattr(result, field))
    return result


@HOSTILE
@given(bodies({**SCOPE, "userMessage": "hi", "assistantMessage": "ok"}, TURN_KEYS))
def test_turn_bodies_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    turn = accepted_or_rejected(lambda b: turn_recorded(b, now=NOW), body)
    if turn is not None:
        assert len(turn.model_dump_json().encode()) <= MAX_MESSAGE_BYTES


@HOSTILE
@given(bodies({**SCOPE, "content": "Ada likes tea"}, REMEMBER_KEYS))
def test_remember_bodies_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    fact = accepted_or_rejected(lambda b: memory_remembered(b, now=NOW), body)
    if fact is not None:
        assert len(fact.model_dump_json().encode()) <= MAX_MESSAGE_BYTES


KNOWLEDGE_KEYS = ["content", "key", "uri", "source", "metadata", "occurredAt"]
CHECKPOINT_KEYS = ["workflowWallet", "runId", "agent", "type", "messages", "step", "goal"]
CHECKPOINT_KEYS += ["success", "qualityScore", "metadata", "occurredAt"]
TRANSCRIPT_KEYS = ["sessionId", "messages", "model", "modelUsed", "totalTokens", "tokenCount"]
TRANSCRIPT_KEYS += ["rememberWorkingMemory", "metadata"]
CHECKPOINT = {
    **SCOPE,
    "runId": "r1",
    "agent": "planner",
    "type": "step_learning",
    "messages": [{"role": "assistant", "content": "done"}],
}
TRANSCRIPT = {
    **SCOPE,
    "sessionId": "s1",
    "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
}


@HOSTILE
@given(bodies({**SCOPE, "content": "The museum opens at nine."}, KNOWLEDGE_KEYS))
def test_knowledge_bodies_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    document = accepted_or_rejected(lambda b: knowledge_submitted(b, now=NOW), body)
    if document is not None:
        assert len(document.model_dump_json().encode()) <= MAX_MESSAGE_BYTES


@HOSTILE
@given(bodies(CHECKPOINT, CHECKPOINT_KEYS))
def test_checkpoint_bodies_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    checkpoint = accepted_or_rejected(lambda b: checkpoint_recorded(b, now=NOW), body)
    if checkpoint is not None:
        assert len(checkpoint.model_dump_json().encode()) <= MAX_MESSAGE_BYTES


@HOSTILE
@given(bodies(TRANSCRIPT, TRANSCRIPT_KEYS))
def test_transcript_bodies_become_valid_turns_or_are_rejected_cleanly(body: Any) -> None:
    try:
        turns = transcript_turns(body, now=NOW)
    except REJECTIONS:
        return
    for turn in turns:
        assert TurnRecorded.model_validate_json(turn.model_dump_json()) == turn
        assert len(turn.model_dump_json().encode()) <= MAX_MESSAGE_BYTES


@HOSTILE
@given(bodies({**SCOPE, "query": "tea?"}, CONTEXT_KEYS))
def test_context_bodies_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    accepted_or_rejected(context_request, body)


@HOSTILE
@given(bodies(SCOPE, []))
def test_scopes_are_accepted_whole_or_rejected_cleanly(body: Any) -> None:
    scope = accepted_or_rejected(Scope.parse, body)
    if isinstance(scope, Scope):
        for value in (scope.agent_wallet, scope.user_address, scope.thread_id, scope.hai_id):
            assert value is None or (value == value.strip() and min(map(ord, value)) >= 32)


VALID: dict[type[BaseModel], dict[str, Any]] = {
    TurnRecorded: turn_recorded(
        {**SCOPE, "userMessage": "a", "assistantMessage": "b"}, now=NOW
    ).model_dump(mode="json"),
    MemoryRemembered: memory_remembered({**SCOPE, "content": "tea"}, now=NOW).model_dump(
        mode="json"
    ),
    MemoryChanged: {"scope": SCOPE, "layers": ["working"], "producer": "p"},
    FactsExtracted: {"scope": SCOPE, "turn_id": "t", "session_id": "s", "extractor": "rule"},
    JobRequested: {"type": "consolidate", "params": {"agentWallet": "0xA1"}},
    ContextRequest: {"scope": SCOPE, "query": "tea"},
    LayerSearchRequest: {"scope": SCOPE, "query": "tea", "layers": ["graph"]},
    ItemRequest: {"scope": SCOPE, "op": "update", "id": "fact_1", "metadata": {"a": 1}},
    AdminRequest: {"op": "evals.run", "scope": SCOPE, "body": {"testCases": []}},
    KnowledgeSubmitted: knowledge_submitted({**SCOPE, "content": "tea"}, now=NOW).model_dump(
        mode="json"
    ),
    WorkflowCheckpointRecorded: checkpoint_recorded(CHECKPOINT, now=NOW).model_dump(mode="json"),
    ReliabilityRequest: {"scope": SCOPE, "agent": "planner", "last": 5},
    SessionRequest: {"scope": SCOPE, "op": "update", "session_id": "s1", "context": ["a"]},
    RerankRequest: {"query": "tea", "documents": [{"content": "a", "score": 0.5}], "top_k": 3},
}


def test_every_contract_on_the_wire_has_a_hostile_input_example() -> None:
    """A contract added to a topic is fuzzed too (the DLQ's own letters are written by the
    consumers, never by callers)."""
    on_the_wire = {c.payload for c in CHANNELS} - {DeadLetter}
    assert on_the_wire - set(VALID) == set()


@st.composite
def mutated(draw: st.DrawFn) -> tuple[type[BaseModel], Any, bool]:
    """A valid wire dict of some contract with one field (maybe nested) set to a hostile
    value, removed, or added; sent as a Python object or as JSON text."""
    contract = draw(st.sampled_from(sorted(VALID, key=lambda c: c.__name__)))
    data = json.loads(json.dumps(VALID[contract]))
    target = data
    nests = [k for k, v in data.items() if isinstance(v, dict)]
    if nests and draw(st.booleans()):
        target = data[draw(st.sampled_from(nests))]
    key = draw(st.one_of(st.sampled_from(sorted(target) or ["x"]), texts))
    if draw(st.integers(0, 4)) == 0:
        target.pop(key, None)
    else:
        target[key] = draw(st.one_of(anything, messages))
    return contract, data, draw(st.booleans())


@HOSTILE
@given(mutated())
def test_every_contract_accepts_whole_or_rejects_cleanly(
    case: tuple[type[BaseModel], Any, bool],
) -> None:
    contract, data, as_json = case
    if as_json:
        try:
            # JSON text as a producer would send it (lone surrogates escaped, NaN as a token)
            text = json.dumps(data)
        except (ValueError, RecursionError):
            return
        accepted_or_rejected(contract.model_validate_json, text)
    else:
        accepted_or_rejected(contract.model_validate, data)


def test_the_valid_examples_are_valid() -> None:
    for contract, data in VALID.items():
        assert accepted_or_rejected(contract.model_validate, data) is not None


# --- explicit limits -----------------------------------------------------------------------


def rejected(parse: Callable[[Any], Any], body: Any, match: str) -> None:
    with pytest.raises(REJECTIONS, match=match):
        parse(body)


def remember(**extra: Any) -> MemoryRemembered:
    return memory_remembered({**SCOPE, "content": "tea", **extra}, now=NOW)


def test_metadata_depth_is_bounded() -> None:
    remember(metadata=nested(MAX_JSON_DEPTH, "dict"))
    rejected(lambda m: remember(metadata=m), nested(MAX_JSON_DEPTH + 1, "dict"), "deeper than")
    rejected(lambda m: remember(metadata=m), {"a": nested(100_000, "list")}, "deeper than")


def test_metadata_size_is_bounded() -> None:
    rejected(lambda m: remember(metadata=m), {f"k{i}": 1 for i in range(1001)}, "more than 1000")
    rejected(
        lambda m: remember(metadata=m),
        {"a": "x" * 30_000, "b": "y" * 30_000, "c": "z" * 30_000},
        f"more than {MAX_JSON_BYTES}",
    )
    rejected(lambda m: remember(metadata=m), {"k" * 300: 1}, "longer than 256")
    rejected(lambda m: remember(metadata=m), {"a": "x" * 32_001}, "longer than 32000")


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({"a": float("nan")}, "finite"),
        ({"a": [float("inf")]}, "finite"),
        ({"a": 2**63}, "64 bits"),
        ({"a": "\ud800"}, "surrogates"),
        ({"\ud800": 1}, "surrogates"),
        ({"a\x00": 1}, "control characters"),
        ({"$where": 1}, "not allowed"),
        ({"a": {"$ne": None}}, "not allowed"),
        ({"a.b": 1}, "not allowed"),
        ({"": 1}, "not allowed"),
        ({"a": b"bytes"}, "not a JSON value"),
        ({"a": {1, 2}}, "not a JSON value"),
    ],
)
def test_metadata_holds_plain_json_with_field_name_keys(metadata: Any, match: str) -> None:
    rejected(lambda m: remember(metadata=m), metadata, match)


def test_unicode_that_has_a_utf8_form_is_kept() -> None:
    fact = remember(content="שלום \u202e 😀 👩‍👩‍👧 a\x00b", metadata={"note": "ü\x00😀"})
    assert MemoryRemembered.model_validate_json(fact.model_dump_json()) == fact


def test_a_lone_surrogate_is_rejected_everywhere() -> None:
    rejected(lambda c: remember(content=c), "tea \ud800", "unicode")
    rejected(Scope.parse, {"agentWallet": "0x\udfff"}, "unicode")
    rejected(context_request, {**SCOPE, "query": "\ud800"}, "unicode")


def test_a_turn_beyond_one_message_is_rejected_with_its_size() -> None:
    body = {**SCOPE, "messages": [message(i, "x" * MAX_CONTENT_CHARS) for i in range(40)]}
    rejected(lambda b: turn_recorded(b, now=NOW), body, f"at most {MAX_MESSAGE_BYTES} bytes")


def test_too_many_messages_tool_calls_and_tool_events_are_rejected() -> None:
    many = [message(i) for i in range(MAX_MESSAGES + 1)]
    rejected(lambda b: turn_recorded(b, now=NOW), {**SCOPE, "messages": many}, "at most 200")
    calls = [{"role": "user", "content": "x", "toolCalls": [{"name": "t"}] * 65}]
    rejected(lambda b: turn_recorded(b, now=NOW), {**SCOPE, "messages": calls}, "at most 64")
    tools = [{"name": "t"}] * (MAX_MESSAGES + 1)
    body = {**SCOPE, "userMessage": "a", "assistantMessage": "b", "toolEvents": tools}
    rejected(lambda b: turn_recorded(b, now=NOW), body, "at most 200")


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"occurredAt": float("inf")}, None),
        ({"occurredAt": 10**30}, None),
        ({"occurredAt": "9999-12-31T23:59:59-14:00"}, None),
        ({"occurredAt": "0001-01-01T00:00:00+14:00"}, "occurredAt"),
        ({"totalTokens": 2**63}, "less than or equal"),
        ({"contextWindow": 10**40}, "less than or equal"),
    ],
)
def test_out_of_range_numbers_never_crash(extra: dict[str, Any], match: str | None) -> None:
    body = {**SCOPE, "userMessage": "a", "assistantMessage": "b", **extra}
    try:
        turn = turn_recorded(body)
    except REJECTIONS as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        assert match is None or match in reason
        return
    assert match is None, "expected a rejection"
    assert TurnRecorded.model_validate_json(turn.model_dump_json()) == turn


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 10**400, -1, 2**63])
def test_out_of_range_as_of_and_confidence_never_crash(value: Any) -> None:
    for parse in (
        lambda: context_request({**SCOPE, "query": "q", "asOf": value}),
        lambda: remember(confidence=value),
    ):
        try:
            result = parse()
        except REJECTIONS:
            continue
        assert isinstance(result, BaseModel)
        assert all(
            not isinstance(v, float) or math.isfinite(v) for v in result.model_dump().values()
        )


# --- the consumers' byte limit -------------------------------------------------------------


async def test_a_consumer_dead_letters_an_oversized_record_without_decoding_it() -> None:
    broker = KafkaBroker()
    processed: list[MemoryChanged] = []
    letters: list[DeadLetter] = []

    async def work(event: MemoryChanged) -> None:
        processed.append(event)

    @broker.subscriber("test.hostile.v1", group_id="g")
    async def handle(msg: KafkaMessage) -> None:
        await consume(
            broker, msg, group="g", contract=MemoryChanged, work=work, attempts=1, backoff_ms=1
        )

    @broker.subscriber(topics.DLQ, group_id="dlq-reader")
    async def read_dlq(letter: DeadLetter) -> None:
        letters.append(letter)

    event = MemoryChanged(scope=Scope.parse(SCOPE), layers=["working"], producer="p")
    padded = event.model_dump_json()[:-1] + ', "pad": "' + "x" * MAX_MESSAGE_BYTES + '"}'
    async with TestKafkaBroker(broker) as br:
        await br.publish(padded.encode(), "test.hostile.v1", key=b"k")
        await br.publish(event, "test.hostile.v1", key=b"k")  # the next one goes through
    assert len(processed) == 1
    [letter] = letters
    assert letter.error_type == "MessageTooLarge"
    assert str(MAX_MESSAGE_BYTES) in letter.error
    assert len(letter.payload) <= MAX_MESSAGE_BYTES // 8
