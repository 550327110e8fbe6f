"""Read-your-writes and item history over HTTP (issue 18 §4, §5): `?wait=true` answers 200
once the write is visible (the next pre_turn sees it, no polling), 504 with the group that is
behind when it is not in time; `GET items/{id}/history` returns every change in order with its
cause and actor, tenant-confined; `POST items/{id}/restore` brings a deleted item back."""

from __future__ import annotations

import uuid

import httpx
import pytest
from pydantic import SecretStr

from services.gateway import create_app
from services.sdk import MemoryClient
from services.settings import Settings
from tests.gateway.conftest import API_KEY, PREFIX, Gateway, agent, served

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_a_waited_turn_is_visible_to_the_next_pre_turn(gw: Gateway) -> None:
    wallet = agent()
    word = f"quaddle{uuid.uuid4().hex[:6]}"
    scope = {"agentWallet": wallet, "userAddress": "ivy", "threadId": "shed"}
    r = await gw.http.post(
        f"{PREFIX}/turns/record",
        params={"wait": "true", "waitTimeout": 60},
        json={**scope, "userMessage": f"The {word} is in the shed.", "assistantMessage": "OK."},
    )
    assert r.status_code == 200, r.text
    assert r.json()["visible"] is True
    assert r.json()["turnId"]
    context = await gw.http.post(
        f"{PREFIX}/context/assemble", json={**scope, "query": f"Where is the {word}?"}
    )
    assert context.status_code == 200
    assert word in (context.json()["prompt"] or ""), context.json()["prompt"]


async def test_a_waited_remember_answers_stored_and_an_unwaited_write_still_202(
    gw: Gateway,
) -> None:
    wallet = agent()
    body = {"agentWallet": wallet, "userAddress": "ivy", "content": "Ivy's bus is the 42."}
    waited = await gw.http.post(f"{PREFIX}/remember", params={"wait": "true"}, json=body)
    assert waited.status_code == 200, waited.text
    assert (waited.json()["visible"], waited.json()["memory"]["status"]) == (True, "stored")
    item = await gw.http.get(
        f"{PREFIX}/items/{waited.json()['memory']['id']}",
        params={"agentWallet": wallet, "userAddress": "ivy"},
    )
    assert item.status_code == 200  # at once
    plain = await gw.http.post(f"{PREFIX}/remember", json={**body, "content": "Ivy cycles."})
    assert plain.status_code == 202
    assert (plain.json()["visible"], plain.json()["memory"]["status"]) == (False, "queued")


async def test_a_write_not_processed_in_time_is_504_naming_the_group(gw: Gateway) -> None:
    prefix = f"nobody-{uuid.uuid4().hex[:8]}"  # a deployment whose groups are not running
    bootstrap = gw.rt.endpoints.kafka_bootstrap
    settings = Settings(kafka_bootstrap=bootstrap, gateway_operator_keys=[SecretStr(API_KEY)])
    async with MemoryClient(bootstrap, group_prefix=prefix) as client:
        app = create_app(settings, client=client)
        async with (
            served(app) as url,
            httpx.AsyncClient(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as http,
        ):
            r = await http.post(
                f"{PREFIX}/turns/record",
                params={"wait": "true", "waitTimeout": 1},
                json={
                    "agentWallet": agent(),
                    "threadId": "t",
                    "userMessage": "a",
                    "assistantMessage": "b",
                },
            )
    assert r.status_code == 504, r.text
    error = r.json()["error"]
    assert f"consumer group {prefix}.transcripts" in error
    assert "not processed within 1 s" in error
    assert "do not send it again" in error


async def test_a_wait_timeout_out_of_range_is_422(gw: Gateway) -> None:
    body = {"agentWallet": agent(), "threadId": "t", "userMessage": "a", "assistantMessage": "b"}
    for bad in ("0", "-1", "301"):
        r = await gw.http.post(
            f"{PREFIX}/turns/record", params={"wait": "true", "waitTimeout": bad}, json=body
        )
        assert r.status_code == 422, (bad, r.text)
        assert "waitTimeout" in r.json()["error"]


async def test_item_history_over_http_in_order_with_causes_and_actors(gw: Gateway) -> None:
    wallet = agent()
    scope = {"agentWallet": wallet, "userAddress": "joe"}
    token = gw.token(sub="joe-app", agent=wallet, user="joe")
    joe = gw.bearer(token)
    stored = await gw.http.post(
        f"{PREFIX}/remember",
        params={"wait": "true"},
        json={**scope, "content": "Joe's locker is 12."},
    )
    assert stored.status_code == 200, stored.text
    item = stored.json()["memory"]["id"]

    patched = await gw.anon.patch(
        f"{PREFIX}/items/{item}", headers=joe, json={**scope, "content": "Joe's locker is 14."}
    )
    assert patched.status_code == 200, patched.text
    deleted = await gw.http.delete(f"{PREFIX}/items/{item}", params=scope)
    assert deleted.status_code == 200
    restored = await gw.http.post(f"{PREFIX}/items/{item}/restore", json=scope)
    assert restored.status_code == 200, restored.text
    assert restored.json()["item"]["status"] == "active"
    again = await gw.http.post(f"{PREFIX}/items/{item}/restore", json=scope)
    assert again.status_code == 400  # it is not deleted any more
    assert "not deleted" in again.json()["error"]

    r = await gw.anon.get(f"{PREFIX}/items/{item}/history", headers=joe)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["itemId"] == item
    assert data["item"]["content"] == "Joe's locker is 14."
    assert data["validity"] == {
        "validFrom": data["item"]["createdAt"],
        "invalidAt": None,
        "supersededBy": None,
    }
    history = data["history"]
    assert [e["kind"] for e in history] == ["created", "updated", "deleted", "restored"]
    assert [e["cause"]["name"] for e in history] == [
        "MemoryRemembered",
        "item.update",
        "item.delete",
        "item.restore",
    ]
    assert history[0]["cause"]["id"] == stored.json()["eventId"]
    assert (history[1]["oldContent"], history[1]["newContent"]) == (
        "Joe's locker is 12.",
        "Joe's locker is 14.",
    )
    assert history[1]["actor"] == "jwt:joe-app"
    assert history[2]["actor"] == history[3]["actor"] == "operator_key"

    limited = await gw.http.get(f"{PREFIX}/items/{item}/history", params={**scope, "limit": 2})
    assert [e["kind"] for e in limited.json()["history"]] == ["deleted", "restored"]


async def test_another_tenant_cannot_read_an_items_history(gw: Gateway) -> None:
    wallet = agent()
    stored = await gw.http.post(
        f"{PREFIX}/remember",
        params={"wait": "true"},
        json={"agentWallet": wallet, "userAddress": "kim", "content": "Kim's door code is 9."},
    )
    item = stored.json()["memory"]["id"]
    path = f"{PREFIX}/items/{item}/history"
    for params in (
        {"agentWallet": wallet, "userAddress": "lee"},
        {"agentWallet": wallet},
        {"agentWallet": agent(), "userAddress": "kim"},
    ):
        r = await gw.http.get(path, params=params)
        assert r.status_code == 404, (params, r.text)
        assert "not found" in r.json()["error"]
    other = gw.bearer(gw.token(agent=agent(), user="kim"))
    assert (await gw.anon.get(path, headers=other)).status_code == 404
    forbidden = await gw.anon.get(path, headers=other, params={"agentWallet": wallet})
    assert forbidden.status_code == 403
    mine = await gw.http.get(path, params={"agentWallet": wallet, "userAddress": "kim"})
    assert [e["kind"] for e in mine.json()["history"]] == ["created"]
