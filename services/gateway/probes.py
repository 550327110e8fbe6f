"""The gateway's operational routes (no authentication, left out of the OpenAPI document:
they are for orchestrators and Prometheus, not API clients; `/healthz` stays documented):

* `GET /livez` — 200 `{"status": "alive"}` while the process answers.
* `GET /readyz` — 200 `{"status": "ready", "missing": []}` when the gateway's `MemoryClient`
  is started and the broker answers a metadata request within `KAFKA_PROBE_SECONDS`;
  otherwise 503 `{"status": "unready", "missing": [...]}` naming what is missing.
* `GET /metrics` — the gateway's registry (`services.gateway.metrics`) in the Prometheus
  text format.
"""

from __future__ import annotations

import logging

from aiokafka.errors import KafkaError
from fastapi import APIRouter, Request, Response

from services.gateway.metrics import GatewayMetrics
from services.sdk.client import MemoryClient
from services.stream.health import live_response, metrics_response, ready_response

log = logging.getLogger(__name__)

KAFKA_PROBE_SECONDS = 1.0
"""How long `/readyz` waits for the broker's metadata answer (below a probe's usual 2 s)."""

router = APIRouter(include_in_schema=False)


async def kafka_missing(client: MemoryClient | None, within_seconds: float) -> list[str]:
    """What keeps `client` from serving requests, in words; empty when its producer is
    started and the broker answered a metadata request within `within_seconds`."""
    if client is None or not client.started:
        return ["Kafka client not started"]
    try:
        await client.ping(within_seconds)
    except (KafkaError, OSError, TimeoutError) as exc:
        log.warning("readiness: the Kafka broker did not answer: %r", exc)
        return [f"Kafka broker did not answer a metadata request within {within_seconds:g} s"]
    return []


@router.get("/livez")
async def livez() -> Response:
    return live_response()


@router.get("/readyz")
async def readyz(request: Request) -> Response:
    client = getattr(request.app.state, "client", None)
    return ready_response(await kafka_missing(client, KAFKA_PROBE_SECONDS))


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    registered: GatewayMetrics = request.app.state.metrics
    return metrics_response(registered.registry)
