"""Working-memory sessions over HTTP (reference §7.2, §13.3): GET and PATCH within the
caller's scope only (404 outside it, 403 for another agent's token), 400 for bad input."""

from __future__ import annotations

import time

import pytest

from tests.gateway.conftest import PREFIX, Gateway, agent, recorded_session

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_get_and_patch_a_working_session_within_scope(gw: Gateway) -> None:
    wallet = agent()
    session_id = await recorded_session(gw, wallet, "ida", "gym")
    url = f"{PREFIX}/sessions/{session_id}/working"
    params = {"agentWallet": wallet, "userAddress": "ida"}

    got = await gw.http.get(url, params=params)
    session = got.json()["session"]
    assert session["sessionId"] == session_id
    assert session["workingMemory"]["context"] == [
        "user: My gym locker is 31.",
        "assistant: Got it.",
    ]

    patched = await gw.http.patch(
        url,
        json={**params, "context": ["user: Actually it is 33."], "state": {"goal": "swim"}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["success"] is True
    memory = patched.json()["session"]["workingMemory"]
    assert memory["context"][-1] == "user: Actually it is 33."
    assert memory["state"]["goal"] == "swim"
    assert "lastTurnId" in memory["state"]

    replaced = await gw.http.patch(
        url, json={**params, "context": ["user: fresh start"], "metadata": {}, "replace": True}
    )
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["session"]["workingMemory"]["context"] == ["user: fresh start"]

    for outsider in (
        {"agentWallet": wallet, "userAddress": "joe"},
        {"agentWallet": wallet},
        {"agentWallet": agent(), "userAddress": "ida"},
    ):
        missing = await gw.http.get(url, params=outsider)
        assert missing.status_code == 404, (outsider, missing.text)
        assert missing.json()["error"]
        edit = await gw.http.patch(url, json={**outsider, "context": ["user: hacked"]})
        assert edit.status_code == 404, (outsider, edit.text)
    after = await gw.http.get(url, params=params)
    assert after.json()["session"]["workingMemory"]["context"] == ["user: fresh start"]

    bad = await gw.http.patch(url, json={**params, "state": {"$where": 1}})
    assert bad.status_code == 400
    assert "$where" in bad.json()["error"]
    no_agent = await gw.http.get(url)
    assert no_agent.status_code == 400


async def test_a_token_for_another_agent_is_403(gw: Gateway) -> None:
    wallet = agent()
    session_id = await recorded_session(gw, wallet, "kim", "t")
    other = gw.bearer(gw.token(sub="x", agent=agent(), exp=int(time.time()) + 600))
    url = f"{PREFIX}/sessions/{session_id}/working"
    r = await gw.anon.get(url, params={"agentWallet": wallet, "userAddress": "kim"}, headers=other)
    assert r.status_code == 403
    r = await gw.anon.patch(url, json={"agentWallet": wallet, "context": ["x"]}, headers=other)
    assert r.status_code == 403
    # the token's own agent has no such session: 404, never the other agent's data
    r = await gw.anon.get(url, params={"userAddress": "kim"}, headers=other)
    assert r.status_code == 404
