"""POST /api/memory/sessions/{id}/compress (reference §10.9) on the real stack: offline (the
rule-based summariser), within the caller's exact tenant (404 outside it), stored once per
content as an `archive` row of the session's own user scope."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import PREFIX, Gateway, agent, recorded_session

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_compression_is_stored_in_the_sessions_own_user_scope_fixes_16_30(
    gw: Gateway,
) -> None:
    wallet = agent()
    session_id = await recorded_session(
        gw, wallet, "ida", "move", "I live in Porto. I work at Acme as a nurse.", "Noted, thanks."
    )
    url = f"{PREFIX}/sessions/{session_id}/compress"
    r = await gw.http.post(url, json={"agentWallet": wallet, "userAddress": "ida"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["summariser"] == "rules-v1"
    assert body["stored"] is True
    assert "Porto" in body["summary"]
    assert body["keyFacts"]
    assert body["entitiesExtracted"] == len(body["entities"])

    # the row is the session's user's: the reference stored it under the agent alone
    item = await gw.http.get(
        f"{PREFIX}/items/{body['vectorId']}", params={"agentWallet": wallet, "userAddress": "ida"}
    )
    assert item.status_code == 200, item.text
    row = item.json()["item"]
    assert row["source"] == "archive"
    assert row["userAddress"] == "ida"
    assert row["metadata"]["type"] == "session_compression"
    assert row["metadata"]["sessionId"] == session_id
    assert row["metadata"]["keyFacts"] == body["keyFacts"]
    for outsider in ({"agentWallet": wallet, "userAddress": "joe"}, {"agentWallet": wallet}):
        hidden = await gw.http.get(f"{PREFIX}/items/{body['vectorId']}", params=outsider)
        assert hidden.status_code == 404, outsider

    again = await gw.http.post(url, json={"agentWallet": wallet, "userAddress": "ida"})
    assert again.status_code == 200, again.text
    assert again.json()["vectorId"] == body["vectorId"]
    assert again.json()["stored"] is False  # the same transcript: one row


async def test_another_tenants_session_is_404(gw: Gateway) -> None:
    wallet = agent()
    session_id = await recorded_session(
        gw, wallet, "kim", "t", "I live in Porto. I work at Acme as a nurse.", "Noted, thanks."
    )
    url = f"{PREFIX}/sessions/{session_id}/compress"
    for outsider in (
        {"agentWallet": wallet, "userAddress": "joe"},
        {"agentWallet": wallet},
        {"agentWallet": agent(), "userAddress": "kim"},
    ):
        r = await gw.http.post(url, json=outsider)
        assert r.status_code == 404, (outsider, r.text)
        assert r.json()["error"]
    assert (await gw.http.post(url, json={"userAddress": "kim"})).status_code == 400
    assert (await gw.anon.post(url, json={"agentWallet": wallet})).status_code == 401
    long_model = {"agentWallet": wallet, "userAddress": "kim", "coordinatorModel": "m" * 201}
    assert (await gw.http.post(url, json=long_model)).status_code == 400
