"""The console's test deployment: a second gateway app on the package's pipeline (`gw`),
with a tenant key, a user key and an operator key, its consumer group prefix (for the lag
table), and one tenant seeded through the real groups: a turn, two facts of one slot (the
first replaced by the second), entities and relations, a stored fact holding markup,
another user's fact, and a dead letter of a remember whose cause was "fixed"."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import Message
from typing import Any

import httpx
import pytest_asyncio
from pydantic import SecretStr

from schemas import topics
from schemas.dead_letters import DeadLetter
from schemas.events import EntityItem, FactItem, FactsExtracted, RelationItem
from schemas.inputs import memory_remembered
from schemas.scope import Scope
from services.gateway import create_app
from services.settings import Settings, TenantKey
from tests.gateway.conftest import PREFIX, Gateway, agent, served, until

SAID = datetime(2026, 3, 1, 12, tzinfo=UTC)
MOVED = SAID + timedelta(days=9)
MARKUP = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
LOCKER = f"{MARKUP} Ana's locker code is 4471."
BOB_SECRET = "Bob keeps his spare key under the blue pot."  # noqa: S105 - not a credential
REPLAYED_FACT = "Ana's bike is the green one by the door."
LETTER_ERROR = "fact store write failed: <b>timed out</b> after 3 attempts"


@dataclass
class Console:
    url: str
    gw: Gateway
    group_prefix: str
    agent: str
    """The seeded tenant's agent (the tenant keys' own)."""
    operator_key: str
    agent_key: str
    """Confined to `agent`."""
    user_key: str
    """Confined to `agent` and the user ana."""
    letter_marker: str
    """Unique text in the seeded dead letter's payload."""

    def http(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"X-API-Key": key} if key else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


def cookie_of(response: httpx.Response) -> tuple[str, Message]:
    """The console cookie a login answer sets, and its attributes."""
    header = response.headers["set-cookie"]
    message = Message()
    message["set-cookie"] = header
    value = header.split(";", 1)[0].split("=", 1)[1]
    return value, message


def extracted(scope: Scope, city: str, at: datetime) -> FactsExtracted:
    return FactsExtracted(
        occurred_at=at,
        scope=scope,
        turn_id=f"turn-{city}-{uuid.uuid4().hex[:6]}",
        session_id="session-console",
        extractor="rules",
        facts=[FactItem(text=f"Ana lives in {city}.", type="context", confidence=0.9, slot="home")],
        entities=[EntityItem(name="Ana", type="person"), EntityItem(name=city, type="place")],
        relations=[RelationItem(source="Ana", type="LIVES_IN", target=city)],
    )


async def _seed(gw: Gateway, wallet: str, prefix: str, marker: str) -> None:
    ana = Scope.parse({"agentWallet": wallet, "userAddress": "ana"})
    key = f"{wallet}|ana"
    await gw.client.publish(topics.FACTS, extracted(ana, "Lisbon", SAID), key)
    await gw.client.publish(topics.FACTS, extracted(ana, "Porto", MOVED), key)
    said = {
        "agentWallet": wallet,
        "userAddress": "ana",
        "threadId": "trip",
        "userMessage": "We are planning a weekend in Porto in May.",
        "assistantMessage": "Lovely: I will keep the Porto weekend in mind.",
    }
    r = await gw.http.post(f"{PREFIX}/turns/record", json=said)
    assert r.status_code == 202, r.text
    for user, text in (("ana", LOCKER), ("bob", BOB_SECRET)):
        body = {"agentWallet": wallet, "userAddress": user, "content": text}
        r = await gw.http.post(f"{PREFIX}/remember", json=body)
        assert r.status_code == 202, r.text

    async def rows() -> list[dict[str, Any]]:
        reply = await gw.client.admin("memory.browse", ana, limit=100)
        return list((reply.result or {}).get("rows", []))

    def ready(found: list[dict[str, Any]]) -> bool:
        texts = {r["content"]: r for r in found}
        lisbon = texts.get("Ana lives in Lisbon.")
        turn = any(r["source"] == "session" for r in found)
        replaced = lisbon is not None and lisbon["status"] == "superseded"
        return LOCKER in texts and replaced and turn

    await until(rows, ready, "the seeded turn and facts, the replaced one marked")

    # a remember that failed while its store was down: the letter holds its exact bytes
    event = memory_remembered(
        {"agentWallet": wallet, "userAddress": "ana", "content": f"{REPLAYED_FACT} {marker}"}
    )
    value = event.model_dump_json().encode()  # as `MemoryClient.publish` sends it
    letter = DeadLetter(
        group=f"{prefix}.facts.remember",
        source_topic=topics.REMEMBER,
        partition=0,
        offset=10**9,
        key=key,
        error=LETTER_ERROR,
        error_type="DependencyFailed",
        attempts=3,
        payload=value.decode(),
        failed_at=datetime.now(UTC),
        raw=base64.b64encode(value).decode(),
        size=len(value),
    )
    await gw.client.publish(topics.DLQ, letter, key)


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def console(gw: Gateway) -> AsyncIterator[Console]:
    wallet = agent()
    keys = {name: f"console-{name}-{uuid.uuid4().hex}" for name in ("operator", "agent", "user")}
    prefix = gw.rt.settings.group_prefix
    settings = Settings(
        kafka_bootstrap=gw.rt.settings.kafka.bootstrap,
        group_prefix=prefix,
        gateway_operator_keys=[SecretStr(keys["operator"])],
        gateway_api_keys=[
            TenantKey(key=SecretStr(keys["agent"]), agent=wallet),
            TenantKey(key=SecretStr(keys["user"]), agent=wallet, user="ana"),
        ],
    )
    marker = f"marker-{uuid.uuid4().hex[:10]}"
    await _seed(gw, wallet, prefix, marker)
    async with served(create_app(settings, client=gw.client)) as url:
        yield Console(
            url, gw, prefix, wallet, keys["operator"], keys["agent"], keys["user"], marker
        )
