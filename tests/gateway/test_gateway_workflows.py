"""Knowledge documents and workflow memory over HTTP: writes answer 202 with the ids of the rows
the groups store, the rows are found by the item and layer routes, reliability is read, and
a credential limited to one agent cannot write or read another wallet's memory."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import BACKLOG_TIMEOUT, PREFIX, Gateway, agent, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_a_document_is_accepted_with_its_chunk_ids_and_then_searchable(gw: Gateway) -> None:
    wallet = agent()
    body = {
        "agentWallet": wallet,
        "userAddress": "ana",
        "key": "faq",
        "content": "The staff canteen serves paella every Thursday at noon.",
    }
    r = await gw.http.post(f"{PREFIX}/knowledge/documents", json=body)
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert accepted["chunks"] == 1
    [chunk] = accepted["ids"]
    params = {"agentWallet": wallet, "userAddress": "ana"}
    item = await until(
        lambda: gw.http.get(f"{PREFIX}/items/{chunk}", params=params),
        lambda resp: resp.status_code == 200,
        "the chunk to be stored",
        timeout=BACKLOG_TIMEOUT,
    )
    assert item.json()["item"]["source"] == "knowledge"
    again = await gw.http.post(f"{PREFIX}/knowledge/documents", json=body)
    assert again.json()["ids"] == [chunk]
    search = {"agentWallet": wallet, "userAddress": "ana", "query": "paella thursday"}
    found = await until(
        lambda: gw.http.post(f"{PREFIX}/layers/search", json={**search, "layers": ["vectors"]}),
        lambda resp: resp.status_code == 200 and resp.json()["layers"].get("vectors"),
        "the chunk in the vectors layer",
    )
    assert found.json()["layers"]["vectors"][0]["id"] == chunk
    other = {**search, "userAddress": "bea", "layers": ["vectors"]}
    assert (await gw.http.post(f"{PREFIX}/layers/search", json=other)).json()["layers"].get(
        "vectors", []
    ) == []


async def test_checkpoints_are_accepted_and_reliability_is_read(gw: Gateway) -> None:
    wallet = agent()
    run: dict[str, Any] = {"workflowWallet": wallet, "runId": "r1", "userAddress": "ana"}
    # step 3 carries no success value: a run, but not a failed one (issue 17)
    for step, success in ((1, True), (2, False), (3, None)):
        r = await gw.http.post(
            f"{PREFIX}/workflows/checkpoints",
            json={
                **run,
                "agent": "planner",
                "type": "step_learning",
                "step": step,
                "goal": "Book the venue",
                "success": success,
                "qualityScore": 0.6,
            },
        )
        assert r.status_code == 202, r.text
        assert r.json()["id"].startswith("wf_")
        assert r.json()["runId"] == "r1"
    params = {"agentWallet": wallet, "userAddress": "ana", "agent": "planner"}
    done = await until(
        lambda: gw.http.get(f"{PREFIX}/workflows/reliability", params=params),
        lambda resp: resp.status_code == 200 and resp.json()["runs"] == 3,
        "three checkpoints counted",
        timeout=BACKLOG_TIMEOUT,
    )
    assert done.json()["graded"] == 2
    assert done.json()["successRate"] == pytest.approx(0.5)  # over the graded two, not 1/3
    assert done.json()["avgQuality"] == pytest.approx(0.6)
    nobody = await gw.http.get(
        f"{PREFIX}/workflows/reliability", params={**params, "userAddress": "bea"}
    )
    assert nobody.json()["runs"] == 0


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/knowledge/documents", {"content": "x"}, "agentWallet is required"),
        ("/knowledge/documents", {"agentWallet": "0xa"}, "content is required"),
        ("/workflows/checkpoints", {"workflowWallet": "0xa", "agent": "p"}, "runId is required"),
        (
            "/workflows/checkpoints",
            {"agentWallet": "0xa", "runId": "r", "agent": "p", "type": "x", "goal": "g"},
            "type must be one of",
        ),
    ],
)
async def test_bad_bodies_are_400(
    gw: Gateway, path: str, body: dict[str, Any], message: str
) -> None:
    r = await gw.http.post(f"{PREFIX}{path}", json=body)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]


async def test_a_limited_credential_stays_in_its_own_wallet(gw: Gateway) -> None:
    mine, theirs = agent(), agent()
    headers = gw.bearer(gw.token(sub="svc", agent=mine))
    checkpoint = {"runId": "r", "agent": "p", "type": "step_learning", "goal": "g"}
    for path, body in (
        ("/knowledge/documents", {"agentWallet": theirs, "content": "x"}),
        ("/workflows/checkpoints", {**checkpoint, "workflowWallet": theirs}),
    ):
        r = await gw.anon.post(f"{PREFIX}{path}", json=body, headers=headers)
        assert r.status_code == 403, (path, r.text)
    r = await gw.anon.get(
        f"{PREFIX}/workflows/reliability",
        params={"agentWallet": theirs, "agent": "p"},
        headers=headers,
    )
    assert r.status_code == 403
    own = await gw.anon.post(f"{PREFIX}/workflows/checkpoints", json=checkpoint, headers=headers)
    assert own.status_code == 202, own.text
    assert (
        await gw.anon.post(f"{PREFIX}/knowledge/documents", json={"content": "x"})
    ).status_code == 401
