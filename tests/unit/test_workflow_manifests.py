"""The workflow manifests (reference §13.1) describe this gateway: four of them, each step a
real route of the app's OpenAPI document."""

from __future__ import annotations

from pydantic import SecretStr

from services.gateway import create_app
from services.gateway.manifests import MANIFESTS
from services.settings import Settings


def test_every_step_is_a_route_of_the_gateway() -> None:
    spec = create_app(Settings(gateway_operator_keys=[SecretStr("k")])).openapi()
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert [m.id for m in MANIFESTS] == [
        "agent_memory_loop",
        "memory_maintenance_loop",
        "memory_pattern_loop",
        "memory_archive_loop",
    ]
    for manifest in MANIFESTS:
        assert manifest.version == "compose.agent_memory.v1"
        assert manifest.loop == ("hot" if manifest.id == "agent_memory_loop" else "durable")
        assert manifest.description
        assert manifest.tokenPolicy
        assert manifest.steps
        for step in manifest.steps:
            assert (step.method, step.path) in routes, (manifest.id, step)
            assert step.operationId
            assert step.purpose
