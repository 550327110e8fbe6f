"""Hostile input against the contracts and the loose-body parsers: every input is either
accepted into a valid frozen contract that round-trips through JSON (and, for what the edge
publishes, fits in one message), or rejected with the project's own error types
(`ScopeError`, pydantic's `ValidationError`, `InputRejected`); never another exception, never
a hang (each example has a deadline).

Strict inputs (issue 13): an accepted contract holds no NaN or infinite number, no time
outside 1970..9999 and no count below its minimum; a number given for a count, a token count,
a time or a job parameter is kept exactly (a count above its maximum lowered to it) or
refused with `ValueOutOfRange` — never clamped up, defaulted or ignored; and the edge's job
parameter check and the `JobRequested` contract always agree."""

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
from schemas.bounds import MAX_TIME_MS, ValueOutOfRange
from schemas.callers import checkpoint_recorded, knowledge_submitted
from schemas.events import (
    MAX_CONTENT_CHARS,
    MAX_MESSAGES,
    EmbeddingRequested,
    FactsExtracted,
    JobRequested,
    KnowledgeSubmitted,
    MemoryChanged,
    MemoryRemembered,
    TurnRecorded,
    WorkflowCheckpointRecorded,
)
from schemas.ids import to_ms
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.jobs import JOB_PARAMS, MAX_BATCH, MAX_DAYS, check_job_params
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
from schemas.sealing import IngressEvent
from schemas.transcripts import transcript_turns
from services.stream.asyncapi import CHANNELS
from services.stream.guard import DeadLetter, consume

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
    assert_strict_numbers(result)
    return result


TIME_FIELDS = frozenset({"timestamp", "as_of"})
COUNT_FIELDS = frozenset({"limit", "max_items", "max_item_chars", "budget_chars", "last", "top_k"})
TOKEN_FIELDS = frozenset({"total_tokens", "context_window"})
FREE_FORM_FIELDS = frozenset({"body", "metadata", "args", "params", "entities", "state", "filters"})
"""Fields typed as free-form JSON objects (`schemas.limits` DocumentObject and kin)."""


def assert_strict_numbers(model: BaseModel) -> None:
    """No NaN or infinity anywhere, times within 1970..9999, counts at least 1, token counts
    at least 0 (walks the dump iteratively)."""
    occurred = getattr(model, "occurred_at", None)
    if isinstance(occurred, datetime):
        assert 0 <= to_ms(occurred) <= MAX_TIME_MS, occurred
    # (name, value, inside a free-form JSON object): a caller's own keys there (an evals.run
    # body, metadata, tool args) are data, not the contract's fields, so only finiteness holds
    stack: list[tuple[str, Any, bool]] = [("", model.model_dump(), False)]
    while stack:
        name, value, free = stack.pop()
        if isinstance(value, dict):
            inner = free or name in FREE_FORM_FIELDS
            stack.extend((k, v, inner) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((name, v, free) for v in value)
        elif isinstance(value, float):
            assert math.isfinite(value), (name, value)
        if isinstance(value, int) and not isinstance(value, bool) and not free:
            if name in TIME_FIELDS:
                assert 0 <= value <= MAX_TIME_MS, (name, value)
            elif name in COUNT_FIELDS:
                assert value >= 1, (name, value)
            elif name in TOKEN_FIELDS:
                assert value >= 0, (name, value)


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
    EmbeddingRequested: {
        "scope": SCOPE,
        "thread_id": "t",
        "model": "m",
        "targets": [{"vector_id": "vec_1", "text": "hello", "turn_id": "u1", "session_id": "s"}],
    },
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
    IngressEvent: {
        "topic": topics.TURNS,
        "key": "0xA1|t1",
        "agent": "0xA1",
        "user": "u1",
        "event": turn_recorded(
            {**SCOPE, "userMessage": "a", "assistantMessage": "b"}, now=NOW
        ).model_dump_json(),
    },
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
        ({"occurredAt": float("inf")}, "occurredAt must be a time"),
        ({"occurredAt": 10**30}, "occurredAt must be a time"),
        ({"occurredAt": "9999-12-31T23:59:59-14:00"}, "occurredAt must be a time"),
        ({"occurredAt": "0001-01-01T00:00:00+14:00"}, "occurredAt must be a time"),
        ({"occurredAt": "9999-12-31T23:59:59+14:00"}, None),
        ({"totalTokens": 2**63}, "totalTokens must be at most"),
        ({"contextWindow": 10**40}, "contextWindow must be at most"),
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
def test_out_of_range_as_of_and_confidence_are_refused(value: Any) -> None:
    with pytest.raises(ValueOutOfRange, match="asOf must be a time"):
        context_request({**SCOPE, "query": "q", "asOf": value})
    with pytest.raises(ValueOutOfRange, match="confidence"):
        remember(confidence=value)


# --- strict numbers: kept exactly, or refused (issue 13) -----------------------------------

COUNTS = [("limit", "limit", 20), ("maxItems", "max_items", 24)]
COUNTS += [("maxItemChars", "max_item_chars", 2000)]
BUDGETS = [("budget", "maxCharacters"), ("budget", "max_chars"), (None, "maxContextCharacters")]


def whole(value: object) -> int | None:
    """`value` as a whole number if it is one (an integral float included), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


@HOSTILE
@given(st.sampled_from(COUNTS), numbers)
def test_a_count_is_kept_lowered_to_its_maximum_or_refused(
    count: tuple[str, str, int], value: Any
) -> None:
    key, field, high = count
    number = whole(value)
    if number is None or number < 1 or number > INT64_MAX:
        with pytest.raises(ValueOutOfRange, match=f"^{key} must be"):
            context_request({**SCOPE, "query": "q", key: value})
        return
    assert getattr(context_request({**SCOPE, "query": "q", key: value}), field) == min(number, high)


@HOSTILE
@given(st.sampled_from(BUDGETS), numbers)
def test_a_budget_is_kept_exactly_or_refused(where: tuple[str | None, str], value: Any) -> None:
    outer, key = where
    body: dict[str, Any] = {**SCOPE, "query": "q"}
    if outer is None:
        body[key] = value
    else:
        body[outer] = {key: value}
    number = whole(value)
    if number is None or not 1 <= number <= INT64_MAX:
        with pytest.raises(ValueOutOfRange, match=key):
            context_request(body)
        return
    assert context_request(body).budget_chars == number


@HOSTILE
@given(
    st.sampled_from(["occurredAt", "timestamp", "toolTimestamp", "totalTokens", "contextWindow"]),
    st.one_of(numbers, st.sampled_from([0, MAX_TIME_MS - 1, MAX_TIME_MS, MAX_TIME_MS + 1])),
)
def test_turn_numbers_are_kept_exactly_or_refused(key: str, value: Any) -> None:
    body: dict[str, Any] = {**SCOPE, "userMessage": "a", "assistantMessage": "b"}
    if key == "timestamp":
        body["messages"] = [{"role": "user", "content": "a", "timestamp": value}]
    elif key == "toolTimestamp":
        body["toolEvents"] = [{"name": "t", "timestamp": value}]
    else:
        body[key] = value
    number = whole(value)
    # the turn's second message is stamped 1 ms after occurredAt
    high = {"occurredAt": MAX_TIME_MS - 1, "timestamp": MAX_TIME_MS}.get(key, INT64_MAX)
    high = MAX_TIME_MS if key == "toolTimestamp" else high
    low = 0
    if number is None or not low <= number <= high:
        with pytest.raises(ValueOutOfRange):
            turn_recorded(body, now=None if key == "occurredAt" else NOW)
        return
    turn = turn_recorded(body, now=None if key == "occurredAt" else NOW)
    kept = {
        "occurredAt": lambda: to_ms(turn.occurred_at),
        "timestamp": lambda: turn.messages[0].timestamp,
        "toolTimestamp": lambda: turn.tool_events[0].timestamp,
        "totalTokens": lambda: turn.total_tokens,
        "contextWindow": lambda: turn.context_window,
    }[key]()
    assert kept == number


JOB_VALUES = st.one_of(
    numbers,
    st.sampled_from([0.5, 1, MAX_DAYS, MAX_DAYS + 0.1, MAX_BATCH, MAX_BATCH + 1, True, "7"]),
    st.fixed_dictionaries({"start": numbers, "end": numbers}),
    texts,
)
JOB_KEYS = ["windowDays", "halfLifeDays", "olderThanDays", "batchSize", "dateRange"]
JOB_KEYS += ["timeRange", "syncToIpfs", "compress", "agentWallets", "confidenceThreshold"]


@HOSTILE
@given(
    st.sampled_from(sorted(JOB_PARAMS)),
    st.dictionaries(st.sampled_from(JOB_KEYS), JOB_VALUES, max_size=3),
)
def test_job_parameters_the_edge_and_the_contract_agree(
    job_type: str, extra: dict[str, Any]
) -> None:
    params = {"agentWallet": "0xA1", **extra}
    try:
        checked = check_job_params(job_type, params)
    except ScopeError as exc:
        edge: str | None = str(exc)
    else:
        edge = None
    try:
        event = JobRequested.model_validate({"type": job_type, "params": params})
    except ValidationError:
        assert edge is not None, "the contract refused what the edge accepted"
        return
    assert edge is None, f"the contract accepted what the edge refused: {edge}"
    assert JobRequested.model_validate_json(event.model_dump_json()) == event
    for name in ("windowDays", "halfLifeDays", "olderThanDays"):
        days = getattr(checked, name, None)
        assert days is None or 0 < days <= MAX_DAYS
    batch = getattr(checked, "batchSize", None)
    assert batch is None or 1 <= batch <= MAX_BATCH


@HOSTILE
@given(st.sampled_from(sorted(JOB_PARAMS)), st.sampled_from(JOB_KEYS[:4]), numbers)
def test_a_job_number_out_of_range_is_value_out_of_range(
    job_type: str, key: str, value: Any
) -> None:
    model = JOB_PARAMS[job_type]
    if key not in model.model_fields:
        return  # refused by name instead (a 400), checked above
    params = {"agentWallet": "0xA1", key: value}
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if key == "batchSize":
        fits = whole(value) is not None and 1 <= (whole(value) or 0) <= MAX_BATCH
    else:
        fits = number is not None and math.isfinite(number) and 0 < number <= MAX_DAYS
    if fits:
        check_job_params(job_type, params)
    else:
        with pytest.raises(ValueOutOfRange, match=key):
            check_job_params(job_type, params)


# --- the consumers' byte limit -------------------------------------------------------------


async def test_a_consumer_dead_letters_an_oversized_record_without_decoding_it() -> None:
    broker = KafkaBroker()
    dead_letters = broker.publisher(topics.DLQ)
    processed: list[MemoryChanged] = []
    letters: list[DeadLetter] = []

    async def work(event: MemoryChanged) -> None:
        processed.append(event)

    @broker.subscriber("test.hostile.v1", group_id="g")
    async def handle(msg: KafkaMessage) -> None:
        await consume(
            dead_letters,
            msg,
            group="g",
            contract=MemoryChanged,
            work=work,
            attempts=1,
            backoff_ms=1,
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


STRICT_ON_THE_WIRE: list[tuple[type[BaseModel], str, str]] = [
    (
        JobRequested,
        '{"type": "patterns_extract", "params": {"agentWallet": "a", "windowDays": -1}}',
        "windowDays",
    ),
    (
        JobRequested,
        '{"type": "consolidate", "params": {"agentWallet": "a", "batchSize": 0}}',
        "batchSize",
    ),
    (JobRequested, '{"type": "cleanup", "params": {"olderThanDays": NaN}}', "olderThanDays"),
    (ContextRequest, '{"scope": {"agentWallet": "a"}, "query": "q", "limit": -1}', "limit"),
    (
        ContextRequest,
        '{"scope": {"agentWallet": "a"}, "query": "q", "budget_chars": 0}',
        "budget_chars",
    ),
    (ContextRequest, '{"scope": {"agentWallet": "a"}, "query": "q", "as_of": -5}', "as_of"),
    (LayerSearchRequest, '{"scope": {"agentWallet": "a"}, "query": "q", "limit": 0}', "limit"),
    (ReliabilityRequest, '{"scope": {"agentWallet": "a"}, "agent": "p", "last": -1}', "last"),
    (
        MemoryRemembered,
        '{"scope": {"agentWallet": "a"}, "content": "c", "confidence": NaN}',
        "confidence",
    ),
    (
        MemoryRemembered,
        '{"scope": {"agentWallet": "a"}, "content": "c", "occurred_at": "0001-01-01T00:00:00Z"}',
        "occurred_at",
    ),
]
"""Records a producer other than our edge could write: each breaks a range of its contract."""


@pytest.mark.parametrize(("contract", "raw", "field"), STRICT_ON_THE_WIRE)
async def test_a_consumer_dead_letters_a_value_out_of_range_with_the_reason(
    contract: type[BaseModel], raw: str, field: str
) -> None:
    broker = KafkaBroker()
    dead_letters = broker.publisher(topics.DLQ)
    processed: list[BaseModel] = []
    letters: list[DeadLetter] = []

    async def work(event: BaseModel) -> None:
        processed.append(event)

    @broker.subscriber("test.strict.v1", group_id="g")
    async def handle(msg: KafkaMessage) -> None:
        await consume(
            dead_letters, msg, group="g", contract=contract, work=work, attempts=1, backoff_ms=1
        )

    @broker.subscriber(topics.DLQ, group_id="dlq-reader")
    async def read_dlq(letter: DeadLetter) -> None:
        letters.append(letter)

    async with TestKafkaBroker(broker) as br:
        await br.publish(raw.encode(), "test.strict.v1", key=b"k")
    assert processed == []
    [letter] = letters
    assert letter.error_type == "ValidationError"
    assert field in letter.error
