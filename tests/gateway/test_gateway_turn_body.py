"""post_turn's body is one model (`schemas.turn_input.TurnInput`, issue 33): the gateway and
the SDK refuse the same bodies with the same line, and the route documents the model."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.bounds import ValueOutOfRange
from schemas.inputs import memory_remembered, turn_recorded
from schemas.scope import ScopeError
from tests.gateway.conftest import PREFIX, Gateway, agent

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

TURN = {"agentWallet": "0xa", "threadId": "t", "userMessage": "a", "assistantMessage": "b"}


@pytest.mark.parametrize(
    "extra",
    [
        {"toolEvents": {"name": "search_flights"}},
        {"toolEvents": [{"name": "t", "status": True}]},
        {"toolEvents": [{"name": "t", "input": "Lisbon"}]},
        {"toolEvents": [{"status": "ok"}]},
        {"messages": [{"role": "robot", "content": "x"}]},
        {"messages": [{"role": "user", "content": " "}]},
        {"messages": [{"role": "user", "content": "x", "name": " "}]},
        {"messages": [{"role": "user", "content": "x", "timestamp": -1}]},
        {"messages": "nope"},
        {"userMessage": None},
        {"tokenCount": -5},
        {"totalTokens": 2.5},
        {"sessionId": "s\t"},
        {"occurredAt": "yesterday"},
        {"summary": ["not", "text"]},
    ],
)
async def test_the_gateway_refuses_a_turn_as_the_sdk_does(
    gw: Gateway, extra: dict[str, Any]
) -> None:
    body = {**TURN, **extra}
    with pytest.raises(ScopeError) as refused:
        turn_recorded(body)
    for path, sent in (("/turns/record", body), ("/loop", {"step": "post_turn", **body})):
        r = await gw.http.post(f"{PREFIX}{path}", json=sent)
        assert r.json() == {"error": str(refused.value)}, path
        assert r.status_code == (422 if isinstance(refused.value, ValueOutOfRange) else 400)


async def test_a_message_timestamp_may_be_an_iso_time(gw: Gateway) -> None:
    body = {
        "agentWallet": agent(),
        "threadId": "t",
        "messages": [{"role": "user", "content": "hi", "timestamp": "2024-01-02T03:04:05Z"}],
    }
    r = await gw.http.post(f"{PREFIX}/turns/record", json=body)
    assert r.status_code == 202, r.text


async def test_the_route_documents_the_model_and_its_aliases(gw: Gateway) -> None:
    schema = (await gw.http.get("/openapi.json")).json()
    post = schema["paths"][f"{PREFIX}/turns/record"]["post"]
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    props = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert ref.endswith("/TurnInput")
    assert "tool_events" in props["toolEvents"]["description"]
    assert "agent_id" in props["agentWallet"]["description"]


@pytest.mark.parametrize(
    "extra",
    [
        {"content": " "},
        {"content": 42},
        {"confidence": 2},
        {"confidence": "high"},
        {"type": "a b"},
        {"retention": 5},
        {"occurredAt": "yesterday"},
    ],
)
async def test_the_gateway_refuses_a_fact_as_the_sdk_does(
    gw: Gateway, extra: dict[str, Any]
) -> None:
    body = {"agentWallet": "0xa", "content": "likes tea", **extra}
    with pytest.raises(ScopeError) as refused:
        memory_remembered(body)
    for path, sent in (("/remember", body), ("/loop", {"step": "remember", **body})):
        r = await gw.http.post(f"{PREFIX}{path}", json=sent)
        assert r.json() == {"error": str(refused.value)}, path
        assert r.status_code == (422 if isinstance(refused.value, ValueOutOfRange) else 400)
