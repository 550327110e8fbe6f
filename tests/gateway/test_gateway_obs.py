"""The gateway's operational routes over real HTTP: `/livez`, `/readyz` and `/metrics` need no
credential and stay out of the OpenAPI document; `/readyz` is 200 with the package's gateway
and 503 (naming what is missing) with a Kafka client that is not started or whose broker went
away; `/metrics` counts requests by route template (never a raw id) and counts 504s.

The 503-after-outage and 504 cases use a broker of their own (`services.ops.stack.Server`, stopped
and started again by its PID): it has no consumer groups, so a request-reply gets no answer."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from services.gateway import create_app
from services.ops.stack import Server
from services.sdk.client import MemoryClient
from services.settings import Settings
from tests.gateway.conftest import API_KEY, PREFIX, Gateway, agent, served, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

OPERATIONAL = ("/livez", "/readyz", "/metrics")
REQUESTS = "mnemostream_gateway_requests_total"
TIMEOUTS = "mnemostream_gateway_upstream_timeouts_total"


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the sample `name` with exactly `labels` in a scrape (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return 0.0


def closed_port() -> int:
    """A port nothing listens on (bound once to find it, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def settings_for(bootstrap: str) -> Settings:
    return Settings(kafka_bootstrap=bootstrap, gateway_operator_keys=[SecretStr(API_KEY)])


async def test_livez_readyz_and_metrics_need_no_credential(gw: Gateway) -> None:
    live = await gw.anon.get("/livez")
    assert (live.status_code, live.json()) == (200, {"status": "alive"})
    ready = await gw.anon.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "missing": []})
    scraped = await gw.anon.get("/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    assert "mnemostream_gateway_request_duration_seconds" in scraped.text
    healthz = await gw.anon.get("/healthz")
    assert (healthz.status_code, healthz.json()) == (200, {"status": "ok"})


async def test_the_operational_routes_are_left_out_of_the_openapi_document(gw: Gateway) -> None:
    paths = (await gw.anon.get("/openapi.json")).json()["paths"]
    assert not set(OPERATIONAL) & set(paths)
    assert "/healthz" in paths


async def test_metrics_count_requests_by_route_template_and_never_by_raw_id(gw: Gateway) -> None:
    wallet, item_id, stray = agent(), f"item-{uuid.uuid4().hex}", f"nowhere-{uuid.uuid4().hex}"
    before = (await gw.anon.get("/metrics")).text
    missing = await gw.http.get(f"{PREFIX}/items/{item_id}", params={"agentWallet": wallet})
    assert missing.status_code == 404, missing.text
    stats = await gw.http.get(f"{PREFIX}/stats/{wallet}")
    assert stats.status_code == 200, stats.text
    anonymous = await gw.anon.get(f"{PREFIX}/stats/{wallet}")
    assert anonymous.status_code == 401
    assert (await gw.anon.get(f"/{stray}")).status_code == 404
    after = (await gw.anon.get("/metrics")).text

    for raw in (wallet, item_id, stray):
        assert raw not in after

    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    items = f"{PREFIX}/items/{{id}}"
    stats_route = f"{PREFIX}/stats/{{agentWallet}}"
    assert grew(REQUESTS, route=items, method="GET", status="4xx") == 1
    assert grew(REQUESTS, route=stats_route, method="GET", status="2xx") == 1
    assert grew(REQUESTS, route=stats_route, method="GET", status="4xx") == 1
    assert grew(REQUESTS, route="unmatched", method="GET", status="4xx") == 1
    seconds = "mnemostream_gateway_request_duration_seconds_count"
    assert grew(seconds, route=stats_route) == 2


async def test_readyz_is_503_while_the_kafka_client_is_not_started() -> None:
    bootstrap = f"127.0.0.1:{closed_port()}"
    client = MemoryClient(bootstrap)  # never started: the broker is not even there
    app = create_app(settings_for(bootstrap), client=client)
    async with served(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json() == {"status": "unready", "missing": ["Kafka client not started"]}
        assert (await http.get("/livez")).status_code == 200


@pytest_asyncio.fixture(loop_scope="package")
async def own_broker(tmp_path: Path) -> AsyncIterator[Server]:
    broker = Server("kafka", tmp_path / "kafka")
    await asyncio.to_thread(broker.start)
    try:
        yield broker
    finally:
        await asyncio.to_thread(broker.stop)


async def test_a_504_is_counted_and_readyz_turns_503_when_the_broker_goes_away(
    own_broker: Server,
) -> None:
    # no consumer group answers on this broker: every read times out (quickly)
    client = MemoryClient(own_broker.endpoint, timeout=0.5)
    await client.start()
    try:
        app = create_app(settings_for(own_broker.endpoint), client=client)
        async with (
            served(app) as url,
            httpx.AsyncClient(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as http,
        ):
            ready = await http.get("/readyz")
            assert (ready.status_code, ready.json()) == (200, {"status": "ready", "missing": []})

            wallet = agent()
            timed_out = await http.get(f"{PREFIX}/stats/{wallet}")
            assert timed_out.status_code == 504, timed_out.text
            scraped = (await http.get("/metrics")).text
            route = f"{PREFIX}/stats/{{agentWallet}}"
            assert sample(scraped, TIMEOUTS, route=route) == 1
            assert sample(scraped, REQUESTS, route=route, method="GET", status="5xx") == 1
            assert wallet not in scraped

            await asyncio.to_thread(own_broker.stop)
            unready = await http.get("/readyz")
            assert unready.status_code == 503, unready.text
            body = unready.json()
            assert body["status"] == "unready"
            assert body["missing"] == ["Kafka broker did not answer a metadata request within 1 s"]

            # back at the same address: ready again (and the client can close cleanly: its
            # consumer's stop raises CancelledError while the broker is away)
            await asyncio.to_thread(own_broker.start)
            await until(lambda: http.get("/readyz"), lambda r: r.status_code == 200, "ready")
    finally:
        await client.close()
