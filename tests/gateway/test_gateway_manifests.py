"""GET /workflows and /workflows/{id} over HTTP: the static manifests, 404 for an unknown
id, and /workflows/reliability still its own route."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import PREFIX, Gateway

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


async def test_workflow_manifests(gw: Gateway) -> None:
    listed = await gw.http.get(f"{PREFIX}/workflows")
    assert listed.status_code == 200, listed.text
    ids = [w["id"] for w in listed.json()["workflows"]]
    assert ids == [
        "agent_memory_loop",
        "memory_maintenance_loop",
        "memory_pattern_loop",
        "memory_archive_loop",
    ]
    one = await gw.http.get(f"{PREFIX}/workflows/memory_archive_loop")
    assert one.status_code == 200
    body = one.json()
    assert body["version"] == "compose.agent_memory.v1"
    assert body["loop"] == "durable"
    assert {"operationId", "method", "path", "purpose"} == set(body["steps"][0])
    assert any(s["path"] == "/api/memory/archives/{id}/sync" for s in body["steps"])
    missing = await gw.http.get(f"{PREFIX}/workflows/nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": "unknown workflow 'nope'"}
    reliability = await gw.http.get(f"{PREFIX}/workflows/reliability")
    assert reliability.status_code == 400  # its own route: agentWallet is required
