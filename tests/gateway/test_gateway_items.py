"""Layer search and the item lifecycle over HTTP: within the caller's scope only, 404
outside it, 400 for bad input."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import PREFIX, Gateway, agent
from tests.gateway.test_gateway_loop import remember

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def stored_fact(gw: Gateway, wallet: str, user: str, text: str) -> str:
    answer = await remember(gw, {"agentWallet": wallet, "userAddress": user, "content": text})
    item_id: str = answer["memory"]["id"]
    return item_id


@pytest.mark.parametrize("path", ["/layers/search", "/items/search"])
async def test_layer_search_returns_raw_hits(gw: Gateway, path: str) -> None:
    wallet = agent()
    item = await stored_fact(gw, wallet, "eve", "Eve's passport expires in October 2027.")
    r = await gw.http.post(
        f"{PREFIX}{path}",
        json={
            "agentWallet": wallet,
            "userAddress": "eve",
            "query": "When does Eve's passport expire?",
            "layers": ["graph", "nonsense"],
            "limit": 500,  # clamped to 20, not an error
        },
    )
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["query"] == "When does Eve's passport expire?"
    assert list(data["layers"]) == ["graph"]
    assert [hit["id"] for hit in data["layers"]["graph"]] == [item]
    assert data["totals"] == {"graph": 1}


async def test_item_get_update_delete_within_scope(gw: Gateway) -> None:
    wallet = agent()
    item = await stored_fact(gw, wallet, "fay", "Fay parks on level 3.")
    params = {"agentWallet": wallet, "userAddress": "fay"}
    got = await gw.http.get(f"{PREFIX}/items/{item}", params=params)
    assert got.status_code == 200
    assert got.json()["item"]["content"] == "Fay parks on level 3."

    for outsider in ({"agentWallet": wallet, "userAddress": "gus"}, {"agentWallet": wallet}):
        missing = await gw.http.get(f"{PREFIX}/items/{item}", params=outsider)
        assert missing.status_code == 404
        assert "error" in missing.json()

    patched = await gw.http.patch(
        f"{PREFIX}/items/{item}",
        json={**params, "content": "Fay parks on level 5.", "metadata": {"note": "moved"}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["updated"] is True
    assert patched.json()["item"]["content"] == "Fay parks on level 5."
    assert patched.json()["item"]["metadata"]["note"] == "moved"

    bad = await gw.http.patch(f"{PREFIX}/items/{item}", json={**params, "status": "exploded"})
    assert bad.status_code == 400
    assert bad.json()["error"]
    bad_confidence = await gw.http.patch(f"{PREFIX}/items/{item}", json={**params, "confidence": 7})
    assert bad_confidence.status_code == 422  # out of its range [0, 1]
    assert "confidence" in bad_confidence.json()["error"]

    deleted = await gw.http.delete(f"{PREFIX}/items/{item}", params=params)
    assert deleted.status_code == 200
    assert deleted.json()["deleted"] is True
    assert deleted.json()["hardDeleted"] is False
    assert (await gw.http.get(f"{PREFIX}/items/{item}", params=params)).status_code == 404
    assert (await gw.http.delete(f"{PREFIX}/items/{item}", params=params)).status_code == 404


async def test_conflict_resolution(gw: Gateway) -> None:
    wallet = agent()
    old = await stored_fact(gw, wallet, "hal", "Hal lives in Oslo.")
    new = await stored_fact(gw, wallet, "hal", "Hal lives in Bergen.")
    scope = {"agentWallet": wallet, "userAddress": "hal"}
    r = await gw.http.post(
        f"{PREFIX}/conflicts/{old}/resolve",
        json={**scope, "resolution": "supersede", "winningMemoryId": new, "reason": "moved"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["resolved"] is True
    assert r.json()["memoryId"] == old
    superseded = (await gw.http.get(f"{PREFIX}/items/{old}", params=scope)).json()["item"]
    assert (superseded["status"], superseded["supersededBy"]) == ("superseded", new)
    assert (await gw.http.get(f"{PREFIX}/items/{new}", params=scope)).json()["item"]["status"] == (
        "active"
    )

    bad = await gw.http.post(
        f"{PREFIX}/conflicts/{new}/resolve", json={**scope, "resolution": "flip"}
    )
    assert bad.status_code == 400
    assert "resolution" in bad.json()["error"]
    unknown = await gw.http.post(
        f"{PREFIX}/conflicts/fact_nope/resolve", json={**scope, "resolution": "keep"}
    )
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "message"),
    [
        ("POST", "/layers/search", {"json": {"agentWallet": "0xa"}}, "query is required"),
        ("POST", "/items/search", {"json": {"query": "x"}}, "agentWallet is required"),
        (
            "POST",
            "/layers/search",
            {"json": {"agentWallet": "0xa", "query": "x", "layers": 3}},
            "layers",
        ),
        ("GET", "/items/x", {}, "agentWallet is required"),
        ("GET", "/items/x", {"params": {"agentWallet": "a" * 300}}, "agentWallet"),
        ("PATCH", "/items/x", {"json": {"content": "y"}}, "agentWallet is required"),
        (
            "DELETE",
            "/items/x",
            {"params": {"agentWallet": "0xa", "hardDelete": "maybe"}},
            "hardDelete",
        ),
        (
            "POST",
            "/conflicts/x/resolve",
            {"json": {"agentWallet": "0xa"}},
            "resolution is required",
        ),
    ],
)
async def test_invalid_item_requests_are_400(
    gw: Gateway, method: str, path: str, kwargs: dict[str, Any], message: str
) -> None:
    r = await gw.http.request(method, f"{PREFIX}{path}", **kwargs)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]
