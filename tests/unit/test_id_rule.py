"""One rule for every identifier (`schemas.scope.Id`): never trimmed, so an id with leading or
trailing whitespace or a control character is refused. Here: every contract's id fields use
it, and the SDK raises before publishing anything. The gateway's side is in
`tests/gateway/test_gateway_credentials.py`, the consumers' in
`tests/services/test_id_dead_letters.py`."""

from __future__ import annotations

import inspect
import sys
import typing
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from schemas import events, requests
from schemas.scope import Id, Scope, ScopeError, clean_id, id_problem
from services.sdk.client import MemoryClient

ID_FIELDS = frozenset(
    {
        "agent_wallet",
        "user_address",
        "thread_id",
        "hai_id",
        "event_id",
        "cause_event_id",
        "session_id",
        "turn_id",
        "context_id",
        "job_id",
        "id",
        "winning_id",
        "agent",
        "key",
    }
)
"""Field names that hold an identifier in the wire contracts (inputs, not replies)."""


def input_contracts() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = [Scope]
    for module in (events, requests):
        for _, model in inspect.getmembers(module, inspect.isclass):
            if model.__module__ != module.__name__ or not issubclass(model, BaseModel):
                continue
            if issubclass(model, events.Event) or model.__name__.endswith("Request"):
                found.append(model)
    return found


def uses_id_rule(model: type[BaseModel], name: str) -> bool:
    field = model.model_fields[name]
    validator = typing.get_args(Id)[1]
    if validator in field.metadata:
        return True
    return any(validator in typing.get_args(arg)[1:] for arg in typing.get_args(field.annotation))


def test_every_id_field_of_every_input_contract_uses_the_one_rule() -> None:
    checked = []
    for model in input_contracts():
        for name in sorted(ID_FIELDS & set(model.model_fields)):
            assert uses_id_rule(model, name), f"{model.__name__}.{name} is not an `Id`"
            checked.append(f"{model.__name__}.{name}")
    # the rule is not vacuous: the contracts this issue is about are among the checked ones
    assert {"Scope.user_address", "TurnRecorded.session_id", "ItemRequest.id"} <= set(checked)
    assert {"JobRequested.job_id", "ReliabilityRequest.agent", "SessionRequest.session_id"} <= set(
        checked
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("alice", None),
        ("ali ce", None),
        ("0x\u200fA", None),  # a format character (Cf) is not a control character
        ("😀", None),
        ("alice ", "must not start or end with whitespace"),
        (" alice", "must not start or end with whitespace"),
        ("alice\u00a0", "must not start or end with whitespace"),
        ("alice\u2003", "must not start or end with whitespace"),
        (" ", "must not start or end with whitespace"),
        ("al\x00ice", "must not contain control characters"),
        ("al\x1bice", "must not contain control characters"),
        ("al\x7fice", "must not contain control characters"),
        ("al\x9bice", "must not contain control characters"),
    ],
)
def test_the_rule(value: str, problem: str | None) -> None:
    assert id_problem(value) == problem
    if problem is None:
        assert clean_id(value, "x") == value  # kept exactly
    else:
        with pytest.raises(ScopeError, match=f"^userAddress: {problem}$"):
            clean_id(value, "userAddress")


def test_empty_and_non_strings_are_absent_for_loose_inputs() -> None:
    assert clean_id("", "x") is None
    assert clean_id(None, "x") is None
    assert clean_id(7, "x") is None


def test_a_contract_names_the_field_in_its_error() -> None:
    with pytest.raises(ValidationError) as caught:
        requests.ItemRequest.model_validate(
            {"scope": {"agentWallet": "A"}, "op": "get", "id": "fact_1 "}
        )
    [error] = caught.value.errors()
    assert (error["loc"], error["msg"]) == (("id",), "must not start or end with whitespace")


# --- the SDK: a bad id raises before anything is published --------------------------------

SCOPE = {"agentWallet": "0xA", "userAddress": "alice", "threadId": "t1"}
TURN = {**SCOPE, "userMessage": "hi", "assistantMessage": "hello"}

SdkCall = Callable[[MemoryClient], Awaitable[Any]]
SDK_CALLS: list[tuple[str, SdkCall]] = [
    ("record_turn user", lambda c: c.record_turn({**TURN, "userAddress": "alice "})),
    ("record_turn agent", lambda c: c.record_turn({**TURN, "agentWallet": " 0xA"})),
    ("record_turn session", lambda c: c.record_turn({**TURN, "sessionId": "s\n"})),
    (
        "remember run id",
        lambda c: c.remember({"agentWallet": "0xA", "run_id": "r ", "content": "x"}),
    ),
    ("context hai", lambda c: c.context("q", {**SCOPE, "mode": "local", "haiId": "\th"})),
    ("context mode", lambda c: c.context("q", {**SCOPE, "mode": "global "})),
    (
        "search_layers user",
        lambda c: c.search_layers("q", {"agentWallet": "0xA", "user_id": "al\x00ice"}),
    ),
    ("item id", lambda c: c.item("get", "fact_1 ", SCOPE)),
    ("newest_items user", lambda c: c.newest_items({**SCOPE, "userAddress": " alice"})),
    ("session id", lambda c: c.session("get", " session:global:0xA:t1", SCOPE)),
    ("compress session id", lambda c: c.compress_session("s1 ", SCOPE)),
    ("admin id", lambda c: c.admin("patterns.get", SCOPE, id="p1\t")),
    ("reliability agent", lambda c: c.reliability("planner ", SCOPE)),
    ("knowledge key", lambda c: c.index_knowledge({**SCOPE, "key": "menu ", "content": "x"})),
    (
        "checkpoint wallet",
        lambda c: c.record_checkpoint(
            {
                "workflowWallet": "0xFlow ",
                "runId": "r1",
                "agent": "planner",
                "type": "step_learning",
                "goal": "g",
            }
        ),
    ),
    (
        "transcript session",
        lambda c: c.index_transcript(
            {**SCOPE, "sessionId": "s1 ", "messages": [{"role": "user", "content": "hi"}]}
        ),
    ),
]


@pytest.mark.parametrize(("what", "call"), SDK_CALLS, ids=[what for what, _ in SDK_CALLS])
async def test_the_sdk_refuses_a_bad_id_before_publishing(what: str, call: SdkCall) -> None:
    # never started: had validation passed, publishing would raise "not started" instead
    client = MemoryClient("127.0.0.1:1")
    with pytest.raises((ScopeError, ValidationError)) as caught:
        await call(client)
    assert "whitespace" in str(caught.value) or "control characters" in str(caught.value), what
    assert client.last_position is None


def test_control_characters_are_exactly_unicodes_cc_category() -> None:
    # the rule searches a fixed class of code points: it must be Unicode's whole `Cc`
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        control = unicodedata.category(ch) == "Cc"
        assert (id_problem(f"a{ch}b") == "must not contain control characters") == control, hex(
            code
        )
