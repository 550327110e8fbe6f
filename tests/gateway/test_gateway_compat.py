"""The reference's compatibility routes over HTTP (reference §13.3 `transcripts/index`,
§13.4 `search` and `GET /{agentWallet}`): thin mappings onto turns, the graph layer and the
items group, within the caller's tenant only."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.gateway.conftest import BACKLOG_TIMEOUT, PREFIX, Gateway, agent, until
from tests.gateway.test_gateway_items import stored_fact
from tests.gateway.test_gateway_loop import assemble

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

TRANSCRIPT = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "I need a hotel in Kyoto for the cherry blossom week."},
    {"role": "assistant", "content": "", "toolCalls": [{"name": "search_hotels"}]},
    {"role": "assistant", "content": "The Gion ryokan has rooms from April 2 to April 9."},
    {"role": "user", "content": "Book the ryokan and add a tea ceremony on April 4."},
    {"role": "assistant", "content": "Booked the ryokan and the tea ceremony on April 4."},
]


def transcript(wallet: str, **extra: Any) -> dict[str, Any]:
    return {
        "sessionId": "conv-kyoto",
        "threadId": "trip-kyoto",
        "agentWallet": wallet,
        "userAddress": "kai",
        "messages": TRANSCRIPT,
        "model": "gpt-x",
        "totalTokens": 321,
        **extra,
    }


def token_for(gw: Gateway, wallet: str) -> dict[str, str]:
    return gw.bearer(gw.token(sub="rt", agent=wallet, exp=int(time.time()) + 600))


async def test_transcript_index_stores_one_turn_per_exchange(gw: Gateway) -> None:
    wallet = agent()
    r = await gw.http.post(f"{PREFIX}/transcripts/index", json=transcript(wallet))
    assert r.status_code == 202, r.text
    answer = r.json()
    assert (answer["indexed"], answer["accepted"]) == (True, True)
    assert (answer["sessionId"], answer["threadId"]) == ("conv-kyoto", "trip-kyoto")
    assert answer["messageCount"] == 5  # the blank tool-call-only message is dropped
    assert answer["vectorCount"] == 2
    assert [t["messageCount"] for t in answer["turns"]] == [3, 2]
    assert answer["position"]["topic"] == "memory.turns.v1"
    params = {"agentWallet": wallet, "userAddress": "kai"}
    for turn in answer["turns"]:
        item = await until(
            lambda turn=turn: gw.http.get(f"{PREFIX}/items/{turn['vectorId']}", params=params),
            lambda resp: resp.status_code == 200,
            f"turn row {turn['vectorId']}",
            timeout=BACKLOG_TIMEOUT,
        )
        assert item.json()["item"]["source"] == "session"
        assert item.json()["item"]["threadId"] == "trip-kyoto"
    # the thread's working memory and transcript are what pre_turn reads
    await assemble(
        gw,
        {**params, "threadId": "trip-kyoto", "query": "When is the tea ceremony?"},
        "April 4",
    )
    stats = (await gw.http.get(f"{PREFIX}/stats/{wallet}", params=params)).json()
    assert stats["totalTranscripts"] == 1

    # indexing the same transcript again stores nothing new (the reference's upsert
    # replaced the stored messages, §16.11): the same turn and row ids
    again = await gw.http.post(f"{PREFIX}/transcripts/index", json=transcript(wallet))
    assert again.status_code == 202
    assert [t["vectorId"] for t in again.json()["turns"]] == [
        t["vectorId"] for t in answer["turns"]
    ]


async def test_transcript_index_is_idempotent_and_appends_fixes_16_11(gw: Gateway) -> None:
    wallet = agent()
    first = await gw.http.post(
        f"{PREFIX}/transcripts/index", json=transcript(wallet, messages=TRANSCRIPT[:4])
    )
    grown = await gw.http.post(f"{PREFIX}/transcripts/index", json=transcript(wallet))
    assert (first.status_code, grown.status_code) == (202, 202)
    assert grown.json()["turns"][0]["turnId"] == first.json()["turns"][0]["turnId"]
    later = grown.json()["turns"][1]["vectorId"]
    params = {"agentWallet": wallet, "userAddress": "kai"}
    await until(
        lambda: gw.http.get(f"{PREFIX}/items/{later}", params=params),
        lambda resp: resp.status_code == 200,
        "the second exchange's row",
        timeout=BACKLOG_TIMEOUT,
    )
    # both exchanges are in the thread's scene (appended, not overwritten)
    await assemble(
        gw,
        {**params, "threadId": "trip-kyoto", "query": "Which ryokan in Gion?", "layers": ["scene"]},
        "Gion",
    )


async def test_transcript_without_user_or_assistant_text_is_skipped(gw: Gateway) -> None:
    body = transcript(
        agent(),
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "  "}],
    )
    r = await gw.http.post(f"{PREFIX}/transcripts/index", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["indexed"] is False
    assert (r.json()["messageCount"], r.json()["vectorCount"], r.json()["turns"]) == (0, 0, [])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sessionId": None}, "sessionId is required"),
        ({"threadId": None}, "threadId is required"),
        ({"agentWallet": None}, "agentWallet is required"),
        ({"messages": None}, "messages must be a non-empty array"),
        ({"messages": [{"role": "boss", "content": "x"}]}, "messages[0].role is invalid"),
        ({"rememberWorkingMemory": False}, "rememberWorkingMemory must be true"),
        ({"mode": "local"}, "haiId is required when mode is local"),
    ],
)
async def test_transcript_index_bad_bodies_are_400(
    gw: Gateway, change: dict[str, Any], message: str
) -> None:
    body = {k: v for k, v in {**transcript(agent()), **change}.items() if v is not None}
    r = await gw.http.post(f"{PREFIX}/transcripts/index", json=body)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]


async def test_search_returns_graph_items_of_the_tenant_only(gw: Gateway) -> None:
    wallet = agent()
    mine = await stored_fact(gw, wallet, "lea", "Lea is allergic to peanuts.")
    await stored_fact(gw, wallet, "max", "Max is allergic to peanuts too.")
    r = await gw.http.post(
        f"{PREFIX}/search",
        json={"agentWallet": wallet, "userAddress": "lea", "query": "What is Lea allergic to?"},
    )
    assert r.status_code == 200, r.text
    items = r.json()
    assert [i["id"] for i in items] == [mine]
    item = items[0]
    assert item["memory"] == item["content"] == "Lea is allergic to peanuts."
    assert (item["agent_id"], item["user_id"]) == (wallet, "lea")
    assert item["metadata"]["layer"] == "graph"
    assert item["metadata"]["source"] == "fact"
    # the score is at the top level too, not only in metadata (§16.8)
    assert item["score"] == item["metadata"]["score"] > 0
    assert item["created_at"].endswith("Z")

    # no user: the agent's user-less facts only, never every user's (§16.3)
    r = await gw.http.post(f"{PREFIX}/search", json={"agentWallet": wallet, "query": "allergic"})
    assert (r.status_code, r.json()) == (200, [])


async def test_search_bad_input_and_limit(gw: Gateway) -> None:
    r = await gw.http.post(f"{PREFIX}/search", json={"agentWallet": agent()})
    assert (r.status_code, r.json()["error"]) == (400, "query is required")
    r = await gw.http.post(f"{PREFIX}/search", json={"query": "x"})
    assert (r.status_code, r.json()["error"]) == (400, "agentWallet is required")
    r = await gw.http.post(
        f"{PREFIX}/search", json={"agentWallet": agent(), "query": "x", "limit": 10_000}
    )
    assert (r.status_code, r.json()) == (200, [])  # clamped, not an error


async def test_newest_facts_are_active_only_and_scoped_fixes_16_3(gw: Gateway) -> None:
    wallet = agent()
    older = await stored_fact(gw, wallet, "noa", "Noa drives a blue van.")
    newer = await stored_fact(gw, wallet, "noa", "Noa plays the cello.")
    gone = await stored_fact(gw, wallet, "noa", "Noa's locker code is 4711.")
    await stored_fact(gw, wallet, "oli", "Oli keeps bees.")
    deleted = await gw.http.delete(
        f"{PREFIX}/items/{gone}", params={"agentWallet": wallet, "userAddress": "noa"}
    )
    assert deleted.status_code == 200

    r = await gw.http.get(f"{PREFIX}/{wallet}", params={"userAddress": "noa"})
    assert r.status_code == 200, r.text
    ids = [i["id"] for i in r.json()]
    # the reference listed deleted rows too: a deleted memory never comes back here
    assert gone not in ids
    assert set(ids) == {older, newer}
    assert all(i["user_id"] == "noa" and i["agent_id"] == wallet for i in r.json())
    one = await gw.http.get(f"{PREFIX}/{wallet}", params={"userAddress": "noa", "limit": 1})
    assert len(one.json()) == 1
    big = await gw.http.get(f"{PREFIX}/{wallet}", params={"userAddress": "noa", "limit": 5000})
    assert big.status_code == 200  # clamped to 200
    # no user: user-less facts only (there are none), never every user's
    assert (await gw.http.get(f"{PREFIX}/{wallet}")).json() == []


async def test_a_token_for_another_agent_is_403_on_every_compat_route(gw: Gateway) -> None:
    wallet, other = agent(), agent()
    await stored_fact(gw, wallet, "pia", "Pia collects stamps.")
    headers = token_for(gw, other)
    calls = [
        gw.anon.post(f"{PREFIX}/transcripts/index", json=transcript(wallet), headers=headers),
        gw.anon.post(
            f"{PREFIX}/search",
            json={"agentWallet": wallet, "userAddress": "pia", "query": "stamps"},
            headers=headers,
        ),
        gw.anon.get(f"{PREFIX}/{wallet}", params={"userAddress": "pia"}, headers=headers),
    ]
    for call in calls:
        r = await call
        assert r.status_code == 403, r.text
        assert r.json() == {"error": "this credential may not access another agentWallet"}
    # its own agent is filled in and sees nothing of the other's
    r = await gw.anon.post(
        f"{PREFIX}/search", json={"userAddress": "pia", "query": "stamps"}, headers=headers
    )
    assert (r.status_code, r.json()) == (200, [])
    unauthenticated = await gw.anon.get(f"{PREFIX}/{wallet}")
    assert unauthenticated.status_code == 401


async def test_single_segment_get_routes_still_answer_over_http(gw: Gateway) -> None:
    """The listing is registered last: GET /patterns, /skills, /workflows keep their own
    answers (every route is checked without a network in tests/unit/test_compat_routes.py)."""
    wallet = agent()
    for name in ("patterns", "skills"):
        r = await gw.http.get(f"{PREFIX}/{name}", params={"agentWallet": wallet})
        assert r.status_code == 200, r.text
        assert r.json() == {name: []}
    r = await gw.http.get(f"{PREFIX}/workflows")
    assert r.status_code == 200
    assert not isinstance(r.json(), list)
