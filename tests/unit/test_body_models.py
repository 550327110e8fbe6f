"""The wire bodies of issue 33 as one model each (`schemas/`): what the gateway, the SDK and
the CLI parse through, the contract each makes without a second pass, and the refusals the
routes answered before."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.errors import InputRejected
from engine.evals.harness import parse_request
from schemas.bodies import parse_body
from schemas.bounds import ValueOutOfRange
from schemas.eval_input import EvalInput
from schemas.events import MAX_CONTENT_CHARS
from schemas.item_input import ItemPatchInput, WorkingPatchInput
from schemas.job_input import JobInput
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.operation_input import CompressInput, PromoteInput, ResolveInput
from schemas.scope import Scope, ScopeError
from schemas.turn_input import TurnInput
from services.sdk.client import MemoryClient

AGENT = {"agentWallet": "0xA", "userAddress": "u1"}


def test_a_model_is_parsed_once_and_a_non_object_is_the_body_s_refusal() -> None:
    turn = parse_body(TurnInput, {**AGENT, "threadId": "t", "userMessage": "a"})
    assert parse_body(TurnInput, turn) is turn
    with pytest.raises(ScopeError, match=r"^body must be an object$"):
        parse_body(TurnInput, ["x"])
    with pytest.raises(ScopeError, match=r"^messages\[0\] must be an object$"):
        parse_body(TurnInput, {**AGENT, "messages": ["x"]})


def test_a_turn_too_big_for_one_message_is_refused_by_the_publish() -> None:
    """The size is checked once, where the event is serialised: before the client even
    needs its producer, so nothing is sent."""
    messages = [
        {"role": "user" if i % 2 else "assistant", "content": "x" * MAX_CONTENT_CHARS}
        for i in range(40)
    ]
    body = {**AGENT, "threadId": "t", "messages": messages}
    client = MemoryClient("localhost:1")
    with pytest.raises(ScopeError, match=f"^the turn is .* at most {MAX_MESSAGE_BYTES} bytes"):
        asyncio.run(client.record_turn(body))


def test_a_job_body_carries_its_parameters_and_fills_a_confined_agent() -> None:
    body = parse_body(JobInput, {"type": "consolidate", "batchSize": 5, "execution": "inline"})
    event = body.requested(agent="0xOwn")
    assert (event.type, event.params) == (
        "consolidate",
        {"batchSize": 5, "execution": "inline", "agentWallet": "0xOwn"},
    )
    given = parse_body(JobInput, {"type": "consolidate", "agentWallets": ["0xB"]})
    assert given.requested(agent="0xOwn").params == {"agentWallets": ["0xB"]}


@pytest.mark.parametrize(
    ("body", "message", "kind"),
    [
        ({}, "^type must be one of consolidate", ScopeError),
        ({"type": "nap"}, "^type must be one of consolidate", ScopeError),
        ({"type": "cleanup", "windowDays": 7}, "^cleanup does not take windowDays", ScopeError),
        ({"type": "consolidate"}, "agentWallet or agentWallets are required", ScopeError),
        ({"type": "decay_update", "batchSize": 10**6}, "^batchSize: ", ValueOutOfRange),
        ({"type": "patterns_extract", "windowDays": "7"}, "^windowDays: ", ScopeError),
        ({"type": "consolidate", "agentWallet": " x"}, "^agentWallet: ", ScopeError),
    ],
)
def test_a_job_body_is_refused_as_the_gateway_refused_it(
    body: dict[str, Any], message: str, kind: type[Exception]
) -> None:
    with pytest.raises(kind, match=message) as refused:
        parse_body(JobInput, body).requested()
    assert kind is ValueOutOfRange or not isinstance(refused.value, ValueOutOfRange)


def test_the_job_body_documents_every_job_s_parameters() -> None:
    properties = JobInput.model_json_schema()["properties"]
    assert {"windowDays", "halfLifeDays", "olderThanDays", "batchSize", "dateRange"} <= set(
        properties
    )


def test_an_item_edit_is_the_update_request_blank_text_absent() -> None:
    patch = parse_body(ItemPatchInput, {**AGENT, "content": "  ", "confidence": 0.5})
    request = patch.request("fact_1", actor="sdk:me")
    assert (request.op, request.id, request.actor) == ("update", "fact_1", "sdk:me")
    assert (request.content, request.confidence, request.scope.user_address) == (
        None,
        0.5,
        "u1",
    )
    with pytest.raises(ValueOutOfRange, match=r"^confidence must be a number from 0 to 1"):
        parse_body(ItemPatchInput, {**AGENT, "confidence": 7})
    with pytest.raises(ScopeError, match="id"):
        patch.request(" bad", actor="sdk:me")


def test_a_session_edit_is_the_update_request_of_the_tenant() -> None:
    edit = parse_body(
        WorkingPatchInput, {**AGENT, "threadId": "t", "context": ["user: hi"], "replace": True}
    )
    request = edit.request("session:global:0xA:t")
    assert (request.op, request.context, request.replace) == ("update", ["user: hi"], True)
    assert request.scope == Scope.parse(AGENT)  # the thread is not the tenant's
    with pytest.raises(ScopeError, match=r"\$where"):
        parse_body(WorkingPatchInput, {**AGENT, "state": {"$where": 1}})


def test_an_eval_body_reaches_the_admin_group_as_the_gateway_checked_it() -> None:
    body = parse_body(
        EvalInput,
        {
            "agent_id": "0xA",
            "testCases": [{"query": "q", "expected_memory_id": "fact_1"}],
            "limit": 3,
            "layers": ["graph", "graph", "vectors"],
        },
    )
    scope = body.scope()
    request = parse_request(body.wire(scope))
    assert (request.scope, request.k, request.layers) == (scope, 3, ("graph", "vectors"))
    assert request.cases[0].expected_memory_id == "fact_1"
    with pytest.raises(ValueOutOfRange, match=r"^limit must be an integer from 1 to 20"):
        parse_body(EvalInput, {**AGENT, "limit": 21})
    with pytest.raises(InputRejected, match="testCases is required"):
        parse_request(body.wire(scope) | {"test_cases": []})


def test_the_other_scoped_bodies_check_what_they_require_after_the_scope() -> None:
    resolve = parse_body(ResolveInput, {**AGENT, "resolution": " keep ", "winningMemoryId": ""})
    assert (resolve.chosen(), resolve.winning_memory_id) == ("keep", None)
    with pytest.raises(ScopeError, match=r"^resolution is required"):
        parse_body(ResolveInput, {**AGENT, "resolution": "  "}).chosen()
    promote = parse_body(PromoteInput, {**AGENT, "skillName": "Book", "validationData": {}})
    assert promote.name() == "Book"
    with pytest.raises(ScopeError, match=r"^skillName is required$"):
        parse_body(PromoteInput, AGENT).name()
    with pytest.raises(ScopeError, match=r"^coordinatorModel: "):
        parse_body(CompressInput, {**AGENT, "coordinatorModel": ""})
