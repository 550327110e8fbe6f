"""The canonical loop over HTTP: writes answer 202 with ids and land through Kafka; pre_turn
returns what was written; bad bodies are 400 with the reference's messages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.gateway.conftest import BACKLOG_TIMEOUT, PREFIX, Gateway, agent, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def remember(gw: Gateway, body: dict[str, Any]) -> dict[str, Any]:
    """POST /remember and wait until the fact is stored (GET /items/{id} answers 200)."""
    r = await gw.http.post(f"{PREFIX}/remember", json=body)
    assert r.status_code == 202, r.text
    memory = r.json()["memory"]
    params = {"agentWallet": body.get("agentWallet", body.get("agent_id"))}
    if body.get("userAddress", body.get("user_id")):
        params["userAddress"] = body.get("userAddress", body.get("user_id"))
    await until(
        lambda: gw.http.get(f"{PREFIX}/items/{memory['id']}", params=params),
        lambda resp: resp.status_code == 200,
        f"fact {memory['id']} to be stored",
    )
    return r.json()


async def assemble(gw: Gateway, body: dict[str, Any], want: str) -> httpx.Response:
    return await until(
        lambda: gw.http.post(f"{PREFIX}/context/assemble", json=body),
        lambda resp: resp.status_code == 200 and want in (resp.json()["prompt"] or ""),
        f"{want!r} in the assembled context",
    )


async def test_remember_is_accepted_and_comes_back_from_context_assemble(gw: Gateway) -> None:
    wallet = agent()
    body = {
        "agent_id": wallet,  # aliases of reference §1.1
        "user_id": "ada",
        "fact": "Ada's favourite tea is smoky lapsang souchong.",
        "type": "preference",
        "retention": "pinned",
    }
    answer = await remember(gw, body)
    assert answer["workflow"]["step"] == "remember"
    assert answer["memory"]["id"].startswith("fact_")
    assert answer["memory"]["text"] == body["fact"]
    assert answer["memory"]["status"] == "queued"
    assert (answer["memory"]["type"], answer["memory"]["retention"]) == ("preference", "pinned")
    assert answer["eventId"]
    assert answer["position"]["topic"] == "memory.remember.v1"

    context = await assemble(
        gw,
        {"agentWallet": wallet, "userAddress": "ada", "query": "What tea does Ada like?"},
        "lapsang souchong",
    )
    data = context.json()
    assert data["workflow"]["step"] == "pre_turn"
    assert data["contextId"]
    assert any(i["id"] == answer["memory"]["id"] for i in data["items"])
    assert data["contextUsage"]["items"] == len(data["items"])
    # another user of the same agent does not see it
    other = await gw.http.post(
        f"{PREFIX}/context/assemble",
        json={"agentWallet": wallet, "userAddress": "bob", "query": "What tea does Ada like?"},
    )
    assert other.status_code == 200
    assert "lapsang" not in (other.json()["prompt"] or "")


async def test_recorded_turn_is_accepted_and_reaches_working_memory(gw: Gateway) -> None:
    wallet = agent()
    r = await gw.http.post(
        f"{PREFIX}/turns/record",
        json={
            "agentWallet": wallet,
            "userAddress": "cy",
            "threadId": "th-1",
            "userMessage": "Please book the quarterly offsite in Porto for March.",
            "assistantMessage": "I'll look for venues in Porto for the March offsite.",
            "toolEvents": [{"name": "search_venues", "status": "completed"}],
        },
    )
    assert r.status_code == 202, r.text
    answer = r.json()
    assert answer["workflow"]["step"] == "post_turn"
    assert answer["turnId"].startswith("turn_")
    assert answer["threadId"] == "th-1"
    assert answer["sessionId"] == f"session:global:{wallet}:th-1"
    # stored once the stats count the transcript (a direct read, never cached), so the
    # first pre_turn below cannot cache an answer from before the write
    await until(
        lambda: gw.http.get(f"{PREFIX}/stats/{wallet}"),
        lambda resp: resp.status_code == 200 and resp.json()["totalTranscripts"] == 1,
        "the transcript to be stored",
        timeout=BACKLOG_TIMEOUT,
    )
    await assemble(
        gw,
        {
            "agentWallet": wallet,
            "userAddress": "cy",
            "threadId": "th-1",
            "query": "Where is the offsite?",
            "layers": ["working", "scene"],
        },
        "Porto",
    )


TURN = {"agentWallet": "0xa", "threadId": "t", "userMessage": "a", "assistantMessage": "b"}


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/context/assemble", {"agentWallet": "0xa"}, "query is required"),
        ("/context/assemble", {"query": "hi"}, "agentWallet is required"),
        (
            "/context/assemble",
            {"agentWallet": "0xa", "query": "hi", "mode": "local"},
            "haiId is required when mode is local",
        ),
        ("/context/assemble", {"agentWallet": "0xa", "query": "hi", "limit": "lots"}, "limit"),
        (
            "/context/assemble",
            {"agentWallet": "0xa", "query": "hi", "filters": {"agentWallet": {"$ne": 1}}},
            "filter",
        ),
        (
            "/turns/record",
            {"agentWallet": "0xa", "threadId": "t"},
            "messages or userMessage plus assistantMessage are required",
        ),
        (
            "/turns/record",
            {"agentWallet": "0xa", "userMessage": "a", "assistantMessage": "b"},
            "threadId or sessionId is required",
        ),
        (
            "/turns/record",
            {"agentWallet": "0xa", "threadId": "t", "messages": [{"role": "boss", "content": "x"}]},
            "messages[0].role is invalid",
        ),
        (
            "/turns/record",
            {"agentWallet": "0xa", "threadId": "t", "messages": "nope"},
            "messages: ",
        ),
        (  # issue 33: one model, one message on both routes ("toolEvents: Input should…")
            "/turns/record",
            {**TURN, "toolEvents": {"name": "search_flights", "status": "completed"}},
            "toolEvents must be a list of tool events, not an object",
        ),
        (  # issue 17: the loop route accepted the object and dropped it (202)
            "/loop",
            {"step": "post_turn", **TURN, "toolEvents": {"name": "search_flights"}},
            "toolEvents must be a list of tool events, not an object",
        ),
        (
            "/loop",
            {"step": "post_turn", **TURN, "toolEvents": [{"name": "t", "args": "Lisbon"}]},
            "toolEvents[0].args must be an object",
        ),
        ("/remember", {"agentWallet": "0xa"}, "content is required"),
        ("/remember", {"agentWallet": "0xa", "content": 42}, "content: "),
        # issue 33: a type is one word, as MCP and the SDK check it (stored before)
        ("/remember", {"agentWallet": "0xa", "content": "x", "type": "$where"}, "type: must be"),
        ("/remember", {"agentWallet": "0xa", "content": "x", "type": "a b"}, "type: must be"),
        ("/loop", {"step": "dance", "agentWallet": "0xa"}, "step must be pre_turn"),
        ("/loop", {"op": "remember", "agentWallet": "0xa"}, "content is required"),
    ],
)
async def test_invalid_loop_bodies_are_400_with_a_clear_error(
    gw: Gateway, path: str, body: dict[str, Any], message: str
) -> None:
    r = await gw.http.post(f"{PREFIX}{path}", json=body)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]


async def test_a_body_that_is_not_a_json_object_is_400(gw: Gateway) -> None:
    not_json = await gw.http.post(
        f"{PREFIX}/remember", content=b"{oops", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400
    assert not_json.json() == {"error": "request body is not valid JSON"}
    array = await gw.http.post(f"{PREFIX}/remember", json=["a"])
    assert array.status_code == 400
    assert array.json()["error"]


async def test_loop_dispatches_each_step(gw: Gateway) -> None:
    wallet = agent()
    saved = await gw.http.post(
        f"{PREFIX}/loop",
        json={"op": "save", "agentWallet": wallet, "content": "Dee keeps bees in Ghent."},
    )
    assert saved.status_code == 202, saved.text
    assert saved.json()["workflow"]["step"] == "remember"
    recorded = await gw.http.post(
        f"{PREFIX}/loop",
        json={
            "step": "record_turn",
            "agentWallet": wallet,
            "threadId": "t1",
            "userMessage": "hello",
            "assistantMessage": "hi",
        },
    )
    assert recorded.status_code == 202, recorded.text
    assert recorded.json()["workflow"]["step"] == "post_turn"
    fact = saved.json()["memory"]["id"]
    await until(
        lambda: gw.http.get(f"{PREFIX}/items/{fact}", params={"agentWallet": wallet}),
        lambda r: r.status_code == 200,
        "the saved fact to be stored",
    )
    context = await until(
        lambda: gw.http.post(
            f"{PREFIX}/loop",
            json={"step": "context", "agentWallet": wallet, "query": "Who keeps bees?"},
        ),
        lambda r: r.status_code == 200 and "bees" in (r.json()["prompt"] or ""),
        "the saved fact through the loop's pre_turn",
    )
    assert context.json()["workflow"]["step"] == "pre_turn"
