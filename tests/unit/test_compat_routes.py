"""The compatibility routes without a network: route resolution (GET /api/memory/{agentWallet}
shadows nothing) and the mapping of a graph hit to the reference's MemoryItem."""

from __future__ import annotations

import re

from fastapi import Request
from fastapi.testclient import TestClient
from pydantic import SecretStr

from services.gateway import create_app
from services.gateway.compat import memory_item
from services.gateway.deps import memory_client
from services.gateway.errors import ApiError
from services.settings import Settings

PREFIX = "/api/memory"
LISTING = PREFIX + "/{agentWallet}"


def test_every_other_get_route_resolves_to_itself_not_the_agent_listing() -> None:
    """GET /api/memory/{agentWallet} matches any one segment: every other GET route must
    still be the one that answers its path (the listing is registered last)."""
    app = create_app(Settings(gateway_operator_keys=[SecretStr("k")]))

    def which_route(request: Request) -> None:
        raise ApiError(409, request.scope["route"].path)

    app.dependency_overrides[memory_client] = which_route  # every read names its route
    client = TestClient(app)  # no lifespan: nothing reaches Kafka
    paths = [p for p, ops in app.openapi()["paths"].items() if "get" in ops]
    assert LISTING in paths
    assert len(paths) >= 15
    for path in paths:
        concrete = re.sub(r"\{[^}]+\}", "x1", path)
        r = client.get(concrete, headers={"X-API-Key": "k"})
        if r.status_code == 409:  # a route that reads through the client: which one?
            assert PREFIX + r.json()["error"] == path, (path, r.text)
        else:  # static routes (manifests, health) answer without the client; the listing
            # always reads through it, so this was not the listing
            assert r.status_code in (200, 404), (path, r.text)
            assert path != LISTING
    r = client.get(f"{PREFIX}/0xAbC", headers={"X-API-Key": "k"})
    assert (r.status_code, r.json()) == (409, {"error": "/{agentWallet}"})


def test_a_graph_hit_maps_to_the_reference_memory_item_with_its_score_fixes_16_8() -> None:
    hit = {
        "id": "fact_1",
        "content": "Ada likes tea",
        "score": 0.75,
        "source": "fact",
        "agentWallet": "0xA",
        "userAddress": "ada",
        "threadId": None,
        "decayScore": 0.9,
        "accessCount": 2,
        "createdAt": 1_700_000_000_000,
        "metadata": {"type": "preference", "confidence": 0.8},
    }
    item = memory_item(hit).model_dump()
    assert item == {
        "id": "fact_1",
        "memory": "Ada likes tea",
        "content": "Ada likes tea",
        "score": 0.75,
        "user_id": "ada",
        "agent_id": "0xA",
        "run_id": None,
        "metadata": {
            "type": "preference",
            "confidence": 0.8,
            "source": "fact",
            "layer": "graph",
            "score": 0.75,
            "decayScore": 0.9,
            "accessCount": 2,
        },
        "created_at": "2023-11-14T22:13:20Z",
    }
