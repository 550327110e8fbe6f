"""The gateway over real HTTP: every consumer group runs in-process on the session's real
stack (one pipeline for the whole package), the FastAPI app is served by uvicorn on a free
port in the same event loop, and tests call it with httpx. Tests use unique agent wallets:
the topics are shared."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
import uvicorn
from pydantic import SecretStr
from starlette.types import ASGIApp

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.gateway import create_app
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.settings import Settings
from tests.support.pipeline import groups_running

API_KEY = "gw-test-key-" + uuid.uuid4().hex
JWT_SECRET = "gw-test-secret-" + uuid.uuid4().hex
PREFIX = "/api/memory"
GROUPS = [
    "transcripts",
    "facts",
    "patterns",
    "invalidation",
    "search",
    "items",
    "jobs",
    "admin",
    "knowledge",
    "workflows",
]


@dataclass
class Gateway:
    url: str
    api_key: str
    """An operator key (every tenant)."""
    http: httpx.AsyncClient
    """Authenticated with the operator key."""
    anon: httpx.AsyncClient
    """No credentials."""
    rt: Runtime
    client: MemoryClient

    @staticmethod
    def token(secret: str = JWT_SECRET, **claims: Any) -> str:
        """A JWT of `claims`. `exp` defaults to ten minutes from now, computed at the call
        (inside the test, never at collection); `exp=None` leaves it out."""
        claims.setdefault("exp", int(time.time()) + 600)
        kept = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(kept, secret, algorithm="HS256")

    def bearer(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


BACKLOG_TIMEOUT = 120.0
"""Seconds to wait for a turn to be processed (after `warm_up`, a turn takes well under a
second; the margin covers other test sessions publishing to the shared topics meanwhile)."""


def agent() -> str:
    """A unique agent wallet (one tenant per test)."""
    return f"0xgw{uuid.uuid4().hex[:12]}"


async def until(
    probe: Callable[[], Awaitable[Any]],
    ok: Callable[[Any], bool],
    what: str,
    timeout: float = 60,
) -> Any:
    """Call `probe` until `ok(result)`; fail with `what` and the last result after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = await probe()
        if ok(result):
            return result
        if time.monotonic() > deadline:
            last = result.text if isinstance(result, httpx.Response) else result
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}; last: {last!r}")
        await asyncio.sleep(0.2)


async def recorded_session(
    gw: Gateway,
    wallet: str,
    user: str,
    thread: str,
    said: str = "My gym locker is 31.",
    answered: str = "Got it.",
) -> str:
    """Record a turn over HTTP and wait until its working session can be read; its id."""
    r = await gw.http.post(
        f"{PREFIX}/turns/record",
        json={
            "agentWallet": wallet,
            "userAddress": user,
            "threadId": thread,
            "userMessage": said,
            "assistantMessage": answered,
        },
    )
    assert r.status_code == 202, r.text
    session_id = f"session:global:{wallet}:{thread}"
    await until(
        lambda: gw.http.get(
            f"{PREFIX}/sessions/{session_id}/working",
            params={"agentWallet": wallet, "userAddress": user},
        ),
        lambda r: r.status_code == 200,
        "the turn's working session",
    )
    return session_id


async def warm_up(client: MemoryClient) -> None:
    """Wait until every group has joined and answers before any test starts timing:
    requests on every partition of each request topic (32 keys cover them all) and one turn
    through the transcripts and patterns groups."""
    wallets = [f"0xwarm{uuid.uuid4().hex[:8]}" for _ in range(32)]
    slow = 240.0
    await asyncio.gather(
        *(client.admin("stats", {"agentWallet": w}, timeout=slow) for w in wallets),
        *(client.item("get", "none", {"agentWallet": w}, timeout=slow) for w in wallets),
        *(client.session("get", "none", {"agentWallet": w}, timeout=slow) for w in wallets),
        *(client.context("warm up", {"agentWallet": w}, timeout=slow) for w in wallets),
        *(client.search_layers("warm up", {"agentWallet": w}, timeout=slow) for w in wallets),
        *(client.reliability("warm", {"agentWallet": w}, timeout=slow) for w in wallets),
    )
    wallet = wallets[0]
    await client.record_turn(
        {
            "agentWallet": wallet,
            "threadId": "warm",
            "userMessage": "warm up",
            "assistantMessage": "ok",
            "toolEvents": [{"name": "warm_tool"}],
        }
    )
    deadline = time.monotonic() + slow
    while True:
        stats = await client.admin("stats", {"agentWallet": wallet}, timeout=slow)
        patterns = await client.admin("patterns.list", {"agentWallet": wallet}, timeout=slow)
        if (stats.result or {}).get("totalTranscripts") and (patterns.result or {}).get("patterns"):
            return
        if time.monotonic() > deadline:
            pytest.fail("the gateway's consumer groups did not catch up with the turns topic")
        await asyncio.sleep(0.2)


@asynccontextmanager
async def served(app: ASGIApp) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free 127.0.0.1 port in this event loop (its lifespan
    included); yields the base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 10
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            pytest.fail(f"uvicorn did not start: {task.exception() if task.done() else ''}")
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def gw(stack: Endpoints, minilm: LocalMiniLMEmbedder) -> AsyncIterator[Gateway]:
    # the groups start at the shared topics' ends (see groups_running); one attempt per
    # message keeps a failing test's poison from delaying the next ones
    async with groups_running(
        stack, minilm, "gateway", GROUPS, max_attempts=1, retry_backoff_ms=0
    ) as (rt, client):
        settings = Settings(
            kafka_bootstrap=stack.kafka_bootstrap,
            gateway_operator_keys=[SecretStr(API_KEY)],
            gateway_jwt_secret=SecretStr(JWT_SECRET),
        )
        app = create_app(settings, client=client)
        async with (
            served(app) as url,
            httpx.AsyncClient(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as http,
            httpx.AsyncClient(base_url=url, timeout=30) as anon,
        ):
            await warm_up(client)
            yield Gateway(url, API_KEY, http, anon, rt, client)
