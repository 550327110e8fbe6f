"""`GET /api/memory/export` (issue 31): one user's memory as JSON lines, confined by the
credential: a token of agent A and user U exports A/U and nothing else (another user or
agent is 403, no user is 400), an operator names any user, and the file is the one
`mnemostream import` reads."""

from __future__ import annotations

import json

import pytest

from engine.adapters.mongo.export import parse_line
from services.ops.tenant_import import read_export
from tests.gateway.conftest import PREFIX, Gateway, agent

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def said(gw: Gateway, wallet: str, user: str, words: str) -> None:
    """A waited turn and a waited remember of one tenant."""
    scope = {"agentWallet": wallet, "userAddress": user, "threadId": "desk"}
    turn = await gw.http.post(
        f"{PREFIX}/turns/record",
        params={"wait": "true", "waitTimeout": 60},
        json={**scope, "userMessage": f"Remember {words}.", "assistantMessage": "Noted."},
    )
    assert turn.status_code == 200, turn.text
    fact = await gw.http.post(
        f"{PREFIX}/remember",
        params={"wait": "true", "waitTimeout": 60},
        json={"agentWallet": wallet, "userAddress": user, "content": f"Keeps {words}."},
    )
    assert fact.status_code == 200, fact.text


async def test_the_export_is_the_credentials_user_and_nothing_else(gw: Gateway) -> None:
    wallet, other = agent(), agent()
    await said(gw, wallet, "alice", "ALICE-ROW locker 31")
    await said(gw, wallet, "bob", "CANARY-BOB locker 7")
    await said(gw, other, "alice", "CANARY-OTHER-AGENT locker 9")
    alice = gw.bearer(gw.token(sub="runtime", agent=wallet, user="alice"))

    r = await gw.anon.get(f"{PREFIX}/export", headers=alice)  # the scope is the token's
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = r.text.splitlines()
    assert json.loads(lines[0])["scope"] == {"agentWallet": wallet, "userAddress": "alice"}
    assert "ALICE-ROW" in r.text
    assert "CANARY" not in r.text
    rows = [parse_line(t)["row"] for t in lines[1:-1]]
    assert rows
    assert {(row["agentWallet"], row["userAddress"]) for row in rows} == {(wallet, "alice")}
    export = read_export(lines)  # a complete export, as the import reads it
    assert export.rows["transcript_turns"]
    assert export.rows["memory"]

    for params in ({"userAddress": "bob"}, {"agentWallet": other}):
        refused = await gw.anon.get(f"{PREFIX}/export", params=params, headers=alice)
        assert refused.status_code == 403, refused.text
        assert "CANARY" not in refused.text
    agent_only = gw.bearer(gw.token(sub="runtime", agent=wallet))
    no_user = await gw.anon.get(f"{PREFIX}/export", headers=agent_only)
    assert no_user.status_code == 400, no_user.text
    assert (
        await gw.anon.get(f"{PREFIX}/export", params={"agentWallet": wallet})
    ).status_code == 401

    bob = await gw.http.get(  # the operator key names the tenant
        f"{PREFIX}/export", params={"agentWallet": wallet, "userAddress": "bob"}
    )
    assert bob.status_code == 200, bob.text
    assert "CANARY-BOB" in bob.text
    assert "ALICE-ROW" not in bob.text
