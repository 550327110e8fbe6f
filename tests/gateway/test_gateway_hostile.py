"""Hostile requests over real HTTP: filter injection is 400 naming the key, a body beyond one
message is 413 (announced or streamed), input the stores could not hold (lone surrogates,
`$` keys, deep nesting) is 400 at the edge instead of a 500 or a poisoned event, and a NaN or
infinite number anywhere in a body is 422 naming where it is (numbers out of range: see
`test_gateway_strict.py`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from schemas.limits import MAX_MESSAGE_BYTES
from tests.gateway.conftest import PREFIX, Gateway, agent

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


@pytest.mark.parametrize(
    ("filters", "reason"),
    [
        ({"$where": "sleep(1000)"}, "is an operator"),
        ({"agentWallet": {"$ne": None}}, "operators such as $ne"),
        ({"userAddress": {"$regex": ".*"}}, "operators such as $ne"),
        ({"metadata.status": "deleted"}, "system-owned"),
        ({"embedding": [0.1]}, "not a filterable field"),
        ({"_id": "x"}, "not a filterable field"),
        ({"agentWallet.x": "0xB"}, "not a filterable field"),
        ({"metadata.$x": 1}, "invalid path segment"),
    ],
)
@pytest.mark.parametrize("route", ["/context/assemble", "/layers/search", "/items/search"])
async def test_filter_injection_is_400_naming_the_key(
    gw: Gateway, route: str, filters: dict[str, Any], reason: str
) -> None:
    body = {"agentWallet": agent(), "query": "anything", "filters": filters}
    r = await gw.http.post(f"{PREFIX}{route}", json=body)
    assert r.status_code == 400, r.text
    [key] = filters
    assert reason in r.json()["error"]
    assert key in r.json()["error"]


async def test_a_body_announcing_more_than_one_message_is_413(gw: Gateway) -> None:
    body = json.dumps({"agentWallet": agent(), "content": "x" * (MAX_MESSAGE_BYTES + 10)}).encode()
    r = await gw.http.post(
        f"{PREFIX}/remember", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 413
    assert r.json() == {
        "error": f"request body too large: at most {MAX_MESSAGE_BYTES} bytes are accepted"
    }


async def test_a_streamed_body_beyond_one_message_is_413(gw: Gateway) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"agentWallet": "0xstream", "content": "'
        for _ in range(MAX_MESSAGE_BYTES // 65_536 + 2):
            yield b"x" * 65_536
        yield b'"}'

    r = await gw.http.post(
        f"{PREFIX}/remember", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 413
    assert "too large" in r.json()["error"]


async def test_a_turn_under_the_body_limit_but_over_one_event_is_400(gw: Gateway) -> None:
    # JSON-escaped control characters: a small body, a big event (each \u0001 is 6 bytes)
    content = "\u0001" * 30_000
    messages = [{"role": "user", "content": content} for _ in range(6)]
    body = {"agentWallet": agent(), "threadId": "t", "messages": messages}
    r = await gw.http.post(f"{PREFIX}/turns/record", json=body)
    assert r.status_code in (400, 413), r.text
    assert "bytes" in r.json()["error"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"agentWallet": "0xA", "content": "tea", "metadata": {"a": "\\ud800"}}', "surrogates"),
        ('{"agentWallet": "0xA", "content": "tea", "metadata": {"$where": 1}}', "not allowed"),
        ('{"agentWallet": "0xA", "content": "tea", "metadata": {"a.b": 1}}', "not allowed"),
        (
            '{"agentWallet": "0xA", "content": "tea", "metadata": {"a": 99999999999999999999}}',
            "64 bits",
        ),
        ('{"agentWallet": "0xA", "content": "tea\\ud800"}', "unicode"),
        ('{"agentWallet": "0xA\\u0000", "content": "tea"}', "control characters"),
        (
            '{"agentWallet": "0xA", "content": "tea", "metadata": '
            + '{"a": ' * 50
            + "1"
            + "}" * 51,
            "deeper than",
        ),
        (
            '{"agentWallet": "0xA", "content": "tea", "metadata": ' + "[" * 5000 + "]" * 5000 + "}",
            "",
        ),
    ],
)
async def test_unstorable_input_is_400_not_500(gw: Gateway, raw: str, reason: str) -> None:
    r = await gw.http.post(
        f"{PREFIX}/remember", content=raw.encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400, r.text
    assert reason in r.json()["error"]


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ('{"agentWallet": "0xA", "content": "tea", "metadata": {"a": NaN}}', "metadata.a"),
        ('{"agentWallet": "0xA", "content": "tea", "metadata": {"a": 1e999}}', "metadata.a"),
        (
            '{"agentWallet": "0xA", "content": "tea", "metadata": {"a": [1, -Infinity]}}',
            "metadata.a[1]",
        ),
        ('{"agentWallet": "0xA", "content": "tea", "x": {"y": [{"z": Infinity}]}}', "x.y[0].z"),
        ("NaN", "body"),
    ],
)
async def test_a_non_finite_number_anywhere_is_422_naming_where(
    gw: Gateway, raw: str, where: str
) -> None:
    r = await gw.http.post(
        f"{PREFIX}/remember", content=raw.encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    assert r.json() == {"error": f"{where}: numbers must be finite (NaN and Infinity are not JSON)"}


async def test_unicode_with_a_utf8_form_is_accepted(gw: Gateway) -> None:
    body = {
        "agentWallet": agent(),
        "content": "שלום \u202e 😀 👩‍👩‍👧 a\x00b",
        "metadata": {"note": "ü\x00😀", "nested": {"list": [1, 2.5, None, True]}},
    }
    r = await gw.http.post(f"{PREFIX}/remember", json=body)
    assert r.status_code == 202, r.text
    assert r.json()["memory"]["text"] == body["content"]
