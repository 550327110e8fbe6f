"""Credentials that confine a caller, over real HTTP (issue 13): a tenant key or a JWT acts
only inside its tenant (403 for another agent, or another user when it names one, on read
and write routes alike; omitted ids are its own), an operator key or token spans tenants, a
JWT needs `exp` and a lifetime within the maximum, `mnemostream token mint` prints a token the
gateway accepts for its tenant only, and ids with surrounding whitespace are refused (400).

A second app is served on the package's pipeline (its client), with tenant keys for one
agent and its user alice, an operator key, and a JWT secret with a one-hour maximum."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from pydantic import SecretStr

from services.gateway import create_app
from services.gateway.auth import OTHER_AGENT, OTHER_USER, USER_CONFINED, JwtRules, mint_token
from services.settings import Settings, TenantKey
from tests.gateway.conftest import PREFIX, Gateway, agent, served, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "creds-secret-" + uuid.uuid4().hex
MAX_TTL = 3_600
RULES = JwtRules(SECRET, "HS256", MAX_TTL)
USER = "alice"


@dataclass
class Tenancy:
    """The second app: `wallet` is the tenant of its confined credentials."""

    http: httpx.AsyncClient
    """No credentials: each request sends its own."""
    wallet: str
    agent_key: str
    user_key: str
    operator_key: str

    def headers(self, credential: str) -> dict[str, str]:
        """Headers of a credential by name; tokens are minted here, at the call."""
        if credential == "agent key":
            return {"X-API-Key": self.agent_key}
        if credential == "user key":
            return {"X-API-Key": self.user_key}
        if credential == "user key as bearer":
            return {"Authorization": f"Bearer {self.user_key}"}
        if credential == "operator key":
            return {"X-API-Key": self.operator_key}
        if credential == "agent token":
            token = mint_token(RULES, ttl_seconds=600, agent=self.wallet)
        elif credential == "user token":
            token = mint_token(RULES, ttl_seconds=600, agent=self.wallet, user=USER)
        else:
            assert credential == "operator token", credential
            token = mint_token(RULES, ttl_seconds=600, operator=True)
        return {"Authorization": f"Bearer {token}"}


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def tenancy(gw: Gateway) -> AsyncIterator[Tenancy]:
    wallet = agent()
    keys = {name: f"{name}-{uuid.uuid4().hex}" for name in ("agent", "user", "operator")}
    settings = Settings(
        gateway_api_keys=[
            TenantKey(key=SecretStr(keys["agent"]), agent=wallet),
            TenantKey(key=SecretStr(keys["user"]), agent=wallet, user=USER),
        ],
        gateway_operator_keys=[SecretStr(keys["operator"])],
        gateway_jwt_secret=SecretStr(SECRET),
        gateway_jwt_max_ttl_seconds=MAX_TTL,
    )
    async with (
        served(create_app(settings, client=gw.client)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        yield Tenancy(http, wallet, keys["agent"], keys["user"], keys["operator"])


def other_agent_requests(wallet: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Reads and writes naming another agent (each alias and place an agent can be named)."""
    other = agent()
    return [
        ("POST", "/remember", {"agentWallet": other, "content": "x"}),
        ("POST", "/turns/record", {"agent_id": other, "threadId": "t", "userMessage": "x"}),
        ("POST", "/knowledge/documents", {"agentWallet": other, "content": "x"}),
        ("POST", "/workflows/checkpoints", {"workflowWallet": other, "runId": "r", "agent": "a"}),
        ("PATCH", "/items/x", {"agentWallet": other, "content": "x"}),
        ("DELETE", f"/items/x?agentWallet={other}", None),
        ("POST", "/context/assemble", {"agentWallet": other, "query": "q"}),
        ("POST", "/search", {"agent_id": other, "query": "q"}),
        ("GET", f"/stats/{other}", None),
        ("GET", f"/{other}", None),
        ("GET", f"/items/x?agentWallet={other}", None),
        ("GET", f"/sessions/s/working?agentWallet={other}", None),
        ("POST", "/jobs", {"type": "consolidate", "agentWallets": [wallet, other]}),
    ]


def other_user_requests(wallet: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Reads and writes naming another user of the same agent."""
    return [
        ("POST", "/remember", {"userAddress": "bob", "content": "x"}),
        ("POST", "/turns/record", {"user_id": "bob", "threadId": "t", "userMessage": "x"}),
        ("POST", "/knowledge/documents", {"userAddress": "bob", "content": "x"}),
        ("POST", "/workflows/checkpoints", {"userAddress": "bob", "runId": "r", "agent": "a"}),
        ("PATCH", "/sessions/s/working", {"agentWallet": wallet, "userAddress": "bob"}),
        ("DELETE", "/items/x?userAddress=bob", None),
        ("POST", "/context/assemble", {"userAddress": "bob", "query": "q"}),
        ("POST", "/layers/search", {"user_id": "bob", "query": "q"}),
        ("GET", f"/stats/{wallet}?userAddress=bob", None),
        ("GET", f"/{wallet}?userAddress=bob", None),
        ("GET", "/items/x?userAddress=bob", None),
        ("GET", "/patterns?userAddress=bob", None),
        ("GET", "/workflows/reliability?agent=a&userAddress=bob", None),
    ]


AGENT_WIDE: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/jobs", {"type": "consolidate"}),
    ("GET", "/jobs/x", None),
    ("GET", "/evals/runs", None),
    ("GET", "/evals/runs/x", None),
]
"""Operations over every user of the agent: refused to a credential confined to a user."""


async def refused(
    t: Tenancy, credential: str, requests: list[tuple[str, str, dict[str, Any] | None]]
) -> set[str]:
    """Send each request with `credential`; every answer must be 403. Their messages."""
    messages = set()
    for method, path, body in requests:
        r = await t.http.request(method, PREFIX + path, json=body, headers=t.headers(credential))
        assert r.status_code == 403, (credential, method, path, r.text)
        messages.add(r.json()["error"])
    return messages


@pytest.mark.parametrize(
    "credential", ["agent key", "user key", "user key as bearer", "agent token", "user token"]
)
async def test_a_confined_credential_is_refused_for_another_agent(
    tenancy: Tenancy, credential: str
) -> None:
    messages = await refused(tenancy, credential, other_agent_requests(tenancy.wallet))
    # a user-confined credential is refused a job before its agents are looked at
    assert messages - {USER_CONFINED} == {OTHER_AGENT}


@pytest.mark.parametrize("credential", ["user key", "user key as bearer", "user token"])
async def test_a_user_confined_credential_is_refused_for_another_user(
    tenancy: Tenancy, credential: str
) -> None:
    assert await refused(tenancy, credential, other_user_requests(tenancy.wallet)) == {OTHER_USER}
    assert await refused(tenancy, credential, AGENT_WIDE) == {USER_CONFINED}


@pytest.mark.parametrize("credential", ["agent key", "agent token"])
async def test_an_agent_confined_credential_reaches_every_user_of_its_agent(
    tenancy: Tenancy, credential: str
) -> None:
    headers = tenancy.headers(credential)
    for path in (f"/stats/{tenancy.wallet}?userAddress=bob", "/evals/runs", "/jobs/none"):
        r = await tenancy.http.get(PREFIX + path, headers=headers)
        assert r.status_code in (200, 404), (path, r.text)  # not 403: its own agent
    cleanup = await tenancy.http.post(PREFIX + "/jobs", json={"type": "cleanup"}, headers=headers)
    assert (cleanup.status_code, cleanup.json()["error"]) == (
        403,
        "cleanup spans every tenant: it needs an operator credential",
    )


async def test_omitted_ids_are_the_credentials_own(tenancy: Tenancy) -> None:
    """A user key writes and reads without naming agent or user: both are its own, so the
    fact lands in (wallet, alice), never in the agent's user-less memory."""
    user = tenancy.headers("user key")
    said = await tenancy.http.post(
        f"{PREFIX}/remember", json={"content": "Alice's locker is number 44."}, headers=user
    )
    assert said.status_code == 202, said.text
    fact = said.json()["memory"]["id"]
    operator = tenancy.headers("operator key")
    await until(
        lambda: tenancy.http.get(
            f"{PREFIX}/items/{fact}",
            params={"agentWallet": tenancy.wallet, "userAddress": USER},
            headers=operator,
        ),
        lambda r: r.status_code == 200,
        "alice's fact to be stored",
    )
    userless = await tenancy.http.get(
        f"{PREFIX}/items/{fact}", params={"agentWallet": tenancy.wallet}, headers=operator
    )
    assert userless.status_code == 404
    found = await tenancy.http.post(
        f"{PREFIX}/context/assemble", json={"query": "Which locker is Alice's?"}, headers=user
    )
    assert found.status_code == 200, found.text
    assert "number 44" in (found.json()["prompt"] or "")
    for credential in ("user token", "user key as bearer"):
        mine = await tenancy.http.get(f"{PREFIX}/items/{fact}", headers=tenancy.headers(credential))
        assert mine.status_code == 200, (credential, mine.text)
    # the agent key has no user: without userAddress it reads the user-less rows only
    agent_only = await tenancy.http.get(
        f"{PREFIX}/items/{fact}", headers=tenancy.headers("agent key")
    )
    assert agent_only.status_code == 404


@pytest.mark.parametrize("credential", ["operator key", "operator token"])
async def test_an_operator_credential_spans_tenants(tenancy: Tenancy, credential: str) -> None:
    headers = tenancy.headers(credential)
    for wallet, user in ((tenancy.wallet, USER), (tenancy.wallet, "bob"), (agent(), None)):
        params = {"userAddress": user} if user else {}
        r = await tenancy.http.get(f"{PREFIX}/stats/{wallet}", params=params, headers=headers)
        assert r.status_code == 200, r.text
    anything = await tenancy.http.get(f"{PREFIX}/jobs/none", headers=headers)
    assert anything.status_code == 404  # any job may be read: none has this id
    nobody = await tenancy.http.get(f"{PREFIX}/evals/runs", headers=headers)
    assert (nobody.status_code, nobody.json()) == (400, {"error": "agentWallet is required"})


async def test_a_jwt_needs_exp_and_a_lifetime_within_the_maximum(tenancy: Tenancy) -> None:
    def bearer(**claims: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}

    now = int(time.time())
    path = f"{PREFIX}/stats/{tenancy.wallet}"
    for headers, status, error in (
        (bearer(agent=tenancy.wallet), 401, "invalid token: the exp claim is required"),
        (
            bearer(agent=tenancy.wallet, iat=now, exp=now + MAX_TTL + 1),
            401,
            "invalid token: its lifetime exceeds the maximum of 3600 s",
        ),
        (
            bearer(scope="operator", exp=now + MAX_TTL + 60),  # no iat: exp − now counts
            401,
            "invalid token: its lifetime exceeds the maximum of 3600 s",
        ),
        (bearer(agent=tenancy.wallet, iat=now, exp=now + MAX_TTL), 200, None),
    ):
        r = await tenancy.http.get(path, headers=headers)
        assert r.status_code == status, r.text
        if error is not None:
            assert r.json() == {"error": error}


async def test_a_jwt_whose_times_are_not_numbers_is_refused(tenancy: Tenancy) -> None:
    """Issue 33: RFC 7519's NumericDate is a JSON number; PyJWT alone took `"exp": "…"`."""

    def bearer(**claims: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}

    now = int(time.time())
    path = f"{PREFIX}/stats/{tenancy.wallet}"
    for claims, name in (
        ({"exp": str(now + 60)}, "exp"),
        ({"exp": now + 60, "iat": str(now)}, "iat"),
        ({"exp": now + 60, "nbf": str(now - 5)}, "nbf"),
        ({"exp": now + 60, "iat": False}, "iat"),
    ):
        r = await tenancy.http.get(path, headers=bearer(agent=tenancy.wallet, **claims))
        assert r.status_code == 401, r.text
        assert r.json() == {"error": f"invalid token: the {name} claim must be a number"}
    fine = bearer(agent=tenancy.wallet, exp=now + 60.5, iat=now, nbf=now - 5)
    assert (await tenancy.http.get(path, headers=fine)).status_code == 200


async def test_a_minted_token_is_accepted_for_its_tenant_only(tenancy: Tenancy) -> None:
    env = {
        **os.environ,
        "MNEMOSTREAM_GATEWAY_JWT_SECRET": SECRET,
        "MNEMOSTREAM_GATEWAY_JWT_MAX_TTL_SECONDS": str(MAX_TTL),
    }
    command = ["-m", "services", "token", "mint", "--agent", tenancy.wallet, "--user", USER]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        "--ttl",
        "10m",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    headers = {"Authorization": f"Bearer {out.decode().strip()}"}

    mine = await tenancy.http.get(f"{PREFIX}/stats/{tenancy.wallet}", headers=headers)
    assert mine.status_code == 200, mine.text
    said = await tenancy.http.post(
        f"{PREFIX}/remember", json={"content": "Alice flies on Friday."}, headers=headers
    )
    assert said.status_code == 202, said.text
    for method, path, body in (
        ("GET", f"/stats/{agent()}", None),
        ("GET", f"/stats/{tenancy.wallet}?userAddress=bob", None),
        ("POST", "/remember", {"agentWallet": agent(), "content": "x"}),
        ("POST", "/remember", {"userAddress": "bob", "content": "x"}),
    ):
        r = await tenancy.http.request(method, PREFIX + path, json=body, headers=headers)
        assert r.status_code == 403, (method, path, r.text)


async def test_ids_with_surrounding_whitespace_are_refused(tenancy: Tenancy) -> None:
    """`"alice "` is not alice: it is refused (400, naming the field), never trimmed."""
    wallet = tenancy.wallet
    padded = "must not start or end with whitespace"
    for credential, method, path, body, field in (
        (
            "operator key",
            "POST",
            "/remember",
            {"agentWallet": wallet, "userAddress": "alice ", "content": "x"},
            "userAddress",
        ),
        ("user key", "POST", "/remember", {"userAddress": "alice ", "content": "x"}, "userAddress"),
        ("user token", "POST", "/context/assemble", {"user_id": " alice", "query": "q"}, "user_id"),
        (
            "operator key",
            "POST",
            "/turns/record",
            {"agentWallet": wallet, "threadId": "t ", "userMessage": "x"},
            "threadId",
        ),
        (
            "operator key",
            "POST",
            "/turns/record",
            {
                "agentWallet": wallet,
                "sessionId": "\ts",
                "userMessage": "x",
                "assistantMessage": "y",
            },
            "sessionId",
        ),
        (
            "operator key",
            "POST",
            "/remember",
            {"agentWallet": wallet, "mode": "local ", "content": "x"},
            "mode",
        ),
        (
            "operator key",
            "POST",
            "/workflows/checkpoints",
            {
                "agentWallet": wallet,
                "runId": "r",
                "agent": "a ",
                "goal": "g",
                "type": "step_learning",
            },
            "agent",
        ),
        ("operator key", "GET", f"/stats/{wallet}?userAddress=alice%20", None, "userAddress"),
        ("operator key", "GET", "/stats/%200xA", None, "agentWallet"),
        ("operator key", "GET", f"/items/fact_1%20?agentWallet={wallet}", None, "id"),
        ("operator key", "GET", f"/sessions/%20s/working?agentWallet={wallet}", None, "session_id"),
        (
            "operator key",
            "GET",
            f"/workflows/reliability?agentWallet={wallet}&agent=a%20",
            None,
            "agent",
        ),
        ("agent key", "GET", "/items/x?userAddress=%09alice", None, "userAddress"),
    ):
        r = await tenancy.http.request(
            method, PREFIX + path, json=body, headers=tenancy.headers(credential)
        )
        assert (r.status_code, r.json()) == (400, {"error": f"{field}: {padded}"}), (path, body)
    control = await tenancy.http.get(
        f"{PREFIX}/stats/{wallet}",
        params={"userAddress": "al\x7fice"},
        headers=tenancy.headers("operator key"),
    )
    assert control.json() == {"error": "userAddress: must not contain control characters"}
