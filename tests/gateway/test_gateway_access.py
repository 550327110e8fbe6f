"""Authentication over real HTTP: every `/api/memory` route is 401 without (or with a wrong)
credential, and only the probes and the API's own documentation are public — by design, each
for the reason given in `PUBLIC`; JWTs work, a wrong secret is 401, a token without `exp` or
without an `agent` claim (unless its scope is "operator") is 401, and a token's `agent` claim
confines it to that agentWallet (403 for any other). Tenant keys, user confinement, the
lifetime limit and minted tokens: `test_gateway_credentials.py`."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.routing import Route, compile_path

from services.gateway import create_app, probes
from services.settings import Settings
from tests.gateway.conftest import PREFIX, Gateway, agent, until
from tests.gateway.test_gateway_loop import remember

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

BODY = {"agentWallet": "0xa", "query": "q", "content": "c", "type": "cleanup"}
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/context/assemble", BODY),
    ("POST", "/turns/record", BODY),
    ("POST", "/remember", BODY),
    ("POST", "/loop", {**BODY, "step": "pre_turn"}),
    ("POST", "/layers/search", BODY),
    ("POST", "/items/search", BODY),
    ("GET", "/items/x?agentWallet=0xa", None),
    ("PATCH", "/items/x", BODY),
    ("DELETE", "/items/x?agentWallet=0xa", None),
    ("POST", "/items/x/restore", BODY),
    ("GET", "/items/x/history?agentWallet=0xa", None),
    ("POST", "/conflicts/x/resolve", {**BODY, "resolution": "keep"}),
    ("GET", "/sessions/x/working?agentWallet=0xa", None),
    ("PATCH", "/sessions/x/working", BODY),
    ("GET", "/patterns?agentWallet=0xa", None),
    ("GET", "/patterns/x?agentWallet=0xa", None),
    ("POST", "/patterns/x/validate", BODY),
    ("POST", "/patterns/x/promote", {**BODY, "skillName": "s"}),
    ("GET", "/skills?agentWallet=0xa", None),
    ("GET", "/skills/x?agentWallet=0xa", None),
    ("POST", "/jobs", BODY),
    ("GET", "/jobs/x", None),
    ("POST", "/evals/runs", {**BODY, "testCases": [{"query": "q", "expected": "e"}]}),
    ("GET", "/evals/runs?agentWallet=0xa", None),
    ("GET", "/evals/runs/x?agentWallet=0xa", None),
    ("GET", "/stats/0xa", None),
    ("POST", "/archives/x/sync", BODY),
    ("GET", "/workflows", None),
    ("GET", "/workflows/agent_memory_loop", None),
    ("POST", "/knowledge/documents", {**BODY, "content": "c"}),
    ("POST", "/workflows/checkpoints", {**BODY, "runId": "r", "agent": "a"}),
    ("GET", "/workflows/reliability?agentWallet=0xa&agent=a", None),
    ("POST", "/sessions/x/compress", BODY),
    ("POST", "/rerank", {"query": "q", "documents": [{"content": "c"}]}),
    ("POST", "/transcripts/index", BODY),
    ("POST", "/search", BODY),
    ("GET", "/0xa", None),
    ("GET", "/export?agentWallet=0xa&userAddress=u", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_every_route_needs_a_credential(
    gw: Gateway, method: str, path: str, body: dict[str, Any] | None
) -> None:
    anonymous = await gw.anon.request(method, f"{PREFIX}{path}", json=body)
    assert anonymous.status_code == 401, anonymous.text
    assert anonymous.json() == {
        "error": "missing credentials: send X-API-Key or Authorization: Bearer"
    }
    assert anonymous.headers["www-authenticate"] == "Bearer"
    wrong_key = await gw.anon.request(
        method, f"{PREFIX}{path}", json=body, headers={"X-API-Key": "nope"}
    )
    assert wrong_key.status_code == 401
    assert wrong_key.json() == {"error": "invalid API key"}
    forged = await gw.anon.request(
        method,
        f"{PREFIX}{path}",
        json=body,
        headers=gw.bearer(gw.token("not-the-secret-but-long-enough-for-hs256", sub="mallory")),
    )
    assert forged.status_code == 401
    assert forged.json() == {"error": "invalid token"}


async def test_the_credential_check_covers_every_documented_operation(gw: Gateway) -> None:
    document = (await gw.http.get("/openapi.json")).json()
    listed = [(method, f"{PREFIX}{path.split('?')[0]}") for method, path, _ in ROUTES]
    for template, operations in document["paths"].items():
        pattern, _, _ = compile_path(template)
        for method in operations:
            if template.startswith(PREFIX):
                assert any(m == method.upper() and pattern.fullmatch(p) for m, p in listed), (
                    f"{method.upper()} {template} is not in ROUTES"
                )


PUBLIC = {
    "/livez": "liveness for orchestrators: it says only that the process answers",
    "/readyz": "readiness for orchestrators and load balancers: it says only whether the "
    "Kafka client is started and the broker answers",
    "/healthz": "the older liveness probe, kept for existing checks",
    "/metrics": "Prometheus scrapes it without a credential; its labels are route templates, "
    "methods and status classes, never an id, a tenant or content (checked below), so it "
    "holds operational data only; keep it off a public ingress if that matters",
}
"""The routes that need no credential, by design, and why."""
DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
"""FastAPI's description of the API: no data, the same for every caller."""


async def test_only_the_probes_and_the_api_docs_are_public() -> None:
    """Routes outside `/api/memory` (where `test_every_route_needs_a_credential` and the
    coverage guard below hold) are exactly the public ones: the documented `/healthz`, the
    undocumented probes, and FastAPI's own description of the API."""
    app = create_app(Settings(gateway_operator_keys=[SecretStr("k")]))
    documented = {path for path in app.openapi()["paths"] if not path.startswith(PREFIX)}
    undocumented = {route.path for route in probes.router.routes if isinstance(route, Route)}
    own = {route.path for route in app.routes if isinstance(route, Route)}
    assert documented | undocumented | (own - DOCS) == set(PUBLIC)
    assert own >= DOCS


async def test_the_probes_need_no_credential_and_metrics_hold_no_tenant(gw: Gateway) -> None:
    wallet = agent()
    mine = await gw.http.get(f"{PREFIX}/stats/{wallet}", params={"userAddress": "u-secret"})
    assert mine.status_code == 200, mine.text
    answers = {path: await gw.anon.get(path) for path in PUBLIC}
    assert {path: r.status_code for path, r in answers.items()} == dict.fromkeys(PUBLIC, 200)
    assert answers["/healthz"].json() == {"status": "ok"}
    scraped = answers["/metrics"].text
    assert 'route="/api/memory/stats/{agentWallet}"' in scraped
    assert wallet not in scraped
    assert "u-secret" not in scraped


async def test_the_api_key_also_works_as_a_bearer_token(gw: Gateway) -> None:
    r = await gw.anon.get(f"{PREFIX}/stats/{agent()}", headers=gw.bearer(gw.api_key))
    assert r.status_code == 200


async def test_jwt_with_an_agent_claim_is_confined_to_that_agent(gw: Gateway) -> None:
    wallet, other = agent(), agent()
    await remember(gw, {"agentWallet": wallet, "content": "Noa's locker is number 12."})
    headers = gw.bearer(gw.token(sub="runtime-1", agent=wallet, exp=int(time.time()) + 600))

    mine = await gw.anon.post(
        f"{PREFIX}/context/assemble",
        json={"query": "Which locker is Noa's?"},  # agentWallet filled in from the token
        headers=headers,
    )
    assert mine.status_code == 200, mine.text
    assert "number 12" in (mine.json()["prompt"] or "")
    stats = await gw.anon.get(f"{PREFIX}/stats/{wallet}", headers=headers)
    assert stats.json()["totalVectors"] == 1

    for method, path, body in (
        ("POST", "/context/assemble", {"agentWallet": other, "query": "q"}),
        ("POST", "/remember", {"agent_id": other, "content": "x"}),
        ("GET", f"/stats/{other}", None),
        ("GET", f"/items/x?agentWallet={other}", None),
        ("POST", "/jobs", {"type": "consolidate", "agentWallets": [wallet, other]}),
        ("POST", "/jobs", {"type": "cleanup"}),
        ("GET", f"/jobs/x?agentWallet={other}", None),
    ):
        r = await gw.anon.request(method, f"{PREFIX}{path}", json=body, headers=headers)
        assert r.status_code == 403, (method, path, r.text)
        assert r.json()["error"]

    job = await gw.anon.post(f"{PREFIX}/jobs", json={"type": "consolidate"}, headers=headers)
    assert job.status_code == 202, job.text
    assert job.json()["params"] == {"agentWallet": wallet}
    await until(
        lambda: gw.anon.get(f"{PREFIX}/jobs/{job.json()['jobId']}", headers=headers),
        lambda r: r.status_code == 200 and r.json()["status"] == "completed",
        "the token's consolidate job to complete",
    )


async def test_a_jwt_needs_exp_and_an_agent_unless_it_is_an_operators(gw: Gateway) -> None:
    for claims, message in (
        ({"sub": "admin-tool"}, 'invalid token: the agent claim is required (or scope "operator")'),
        ({"agent": agent(), "exp": None}, "invalid token: the exp claim is required"),
        ({"agent": agent(), "exp": int(time.time()) - 60}, "token expired"),
    ):
        r = await gw.anon.get(f"{PREFIX}/stats/{agent()}", headers=gw.bearer(gw.token(**claims)))
        assert (r.status_code, r.json()) == (401, {"error": message}), claims
    operator = gw.bearer(gw.token(sub="admin-tool", scope="operator"))
    for wallet in (agent(), agent()):
        r = await gw.anon.get(f"{PREFIX}/stats/{wallet}", headers=operator)
        assert r.status_code == 200, r.text
