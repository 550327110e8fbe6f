"""POST /archives/{id}/sync over HTTP. The package's gateway runs without Pinata, so an
archive of the caller's agent answers 400 with what to configure; another agent's archive is
404 (pinning itself is tested against a Pinata stub in tests/integration/test_archive_sync.py)."""

from __future__ import annotations

import time

import pytest

from services.groups.jobs.archive_pins import NOT_CONFIGURED
from tests.gateway.conftest import PREFIX, Gateway, agent
from tests.integration.test_archive_sync import stored_archive

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_sync_needs_pinning_configured_and_stays_in_the_agents_scope(gw: Gateway) -> None:
    wallet = agent()
    archive = await stored_archive(gw.rt, wallet, "lea")
    url = f"{PREFIX}/archives/{archive.archive_id}/sync"

    r = await gw.http.post(url, json={"agentWallet": wallet})
    assert r.status_code == 400, r.text
    assert r.json() == {"error": NOT_CONFIGURED}

    for outsider in ({"agentWallet": agent()}, {"agentWallet": wallet, "userAddress": "max"}):
        r = await gw.http.post(url, json=outsider)
        assert r.status_code == 404, (outsider, r.text)
    r = await gw.http.post(f"{PREFIX}/archives/arc_nope/sync", json={"agentWallet": wallet})
    assert r.status_code == 404
    assert (await gw.http.post(url, json={})).status_code == 400

    other = gw.bearer(gw.token(sub="x", agent=agent(), exp=int(time.time()) + 600))
    r = await gw.anon.post(url, json={"agentWallet": wallet}, headers=other)
    assert r.status_code == 403
    r = await gw.anon.post(url, json={}, headers=other)  # its own agent: no such archive
    assert r.status_code == 404
