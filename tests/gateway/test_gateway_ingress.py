"""The gateway with sealed events (issue 31), both paths:

* with `MNEMOSTREAM_EVENT_INGRESS` set it publishes a turn to `memory.ingress.v1` without
  holding any key; the sealing group seals it under the tenant's key onto `memory.turns.v1`;
* given `MNEMOSTREAM_EVENT_ENCRYPTION_KEY` it seals the turn itself onto `memory.turns.v1`
  (one hop: no sealing group runs, and nothing goes to the ingress).

Either way no word of the turn is in clear on the turns topic, the transcripts group opens
it, and the gateway reads the stored turn back in clear.

Its own pipeline (sealing, transcripts, items with the master key) and its own gateway, built
from settings as `mnemostream gateway` builds it (its own client): not the package's `gw`."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import SecretStr

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.sealing import envelope, is_sealed
from schemas import topics
from services.endpoints import Endpoints
from services.gateway import create_app
from services.ops.log_reach import log_reach
from services.runtime import Runtime
from services.runtime.edge import edge_sealer
from services.settings import Settings
from tests.gateway.conftest import PREFIX, served, until
from tests.support.pipeline import groups_running

KEY = base64.b64encode(b"g" * 32).decode()
API_KEY = "gw-ingress-" + uuid.uuid4().hex


async def values_since(
    bootstrap: str, topic: str, since: Mapping[tuple[str, int], int]
) -> list[bytes]:
    """Every value of `topic` from the offsets `since` to the partitions' ends, now."""
    reach = await log_reach(bootstrap, [topic])
    wanted = {
        TopicPartition(t, p): (since.get((t, p), 0), part.end)
        for (t, p), part in reach.items()
        if part.end > since.get((t, p), 0)
    }
    found: list[bytes] = []
    if not wanted:
        return found
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(wanted))
        for tp, (start, _) in wanted.items():
            consumer.seek(tp, start)
        left = set(wanted)
        while left:
            batch = await consumer.getmany(*left, timeout_ms=2000)
            assert batch, f"records not delivered: {sorted(left)}"
            for tp, got in batch.items():
                found += [r.value or b"" for r in got if r.offset < wanted[tp][1]]
                if got[-1].offset + 1 >= wanted[tp][1]:
                    left.discard(tp)
    finally:
        await consumer.stop()
    return found


async def test_a_turn_posted_with_the_ingress_on_is_sealed_in_the_log_and_stored(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    wallet = f"0xgwseal{uuid.uuid4().hex[:10]}"
    canary = f"canary{uuid.uuid4().hex[:8]}"
    bootstrap = stack.kafka_bootstrap
    groups = ["sealing", "transcripts", "items"]
    async with groups_running(
        stack, minilm, "gwingress", groups, event_encryption_key=KEY, event_ingress=True
    ) as (rt, _):
        # the gateway's settings name the ingress and no key (it must not need the master key)
        settings = Settings(
            kafka_bootstrap=bootstrap,
            gateway_operator_keys=[SecretStr(API_KEY)],
            event_ingress=True,
        )
        assert settings.sealing.ingress
        assert settings.sealing.encryption_key is None
        before = {
            key: part.end for key, part in (await log_reach(bootstrap, [topics.TURNS])).items()
        }
        async with served(create_app(settings)) as url:
            said = await post_and_read_back(url, wallet, canary)
        await sealed_on_the_turns_topic(rt, bootstrap, before, wallet, said, canary)


async def test_a_gateway_given_the_key_seals_a_turn_itself_in_one_hop(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    wallet = f"0xgwedge{uuid.uuid4().hex[:10]}"
    canary = f"canary{uuid.uuid4().hex[:8]}"
    bootstrap = stack.kafka_bootstrap
    # no sealing group: the gateway's own sealer is the only way the turn is sealed
    async with groups_running(
        stack, minilm, "gwedge", ["transcripts", "items"], event_encryption_key=KEY
    ) as (rt, _):
        settings = Settings(
            kafka_bootstrap=bootstrap,
            mongo_uri=stack.mongo_uri,
            mongo_db=rt.settings.mongo.db,  # the groups' tenant keys
            gateway_operator_keys=[SecretStr(API_KEY)],
            event_encryption_key=SecretStr(KEY),
            event_ingress=True,  # ignored: a gateway holding the key seals itself
        )
        reach = await log_reach(bootstrap, [topics.TURNS, topics.INGRESS])
        before = {key: part.end for key, part in reach.items()}
        app = create_app(settings, sealing=lambda: edge_sealer(settings))
        async with served(app) as url:
            said = await post_and_read_back(url, wallet, canary)
        await sealed_on_the_turns_topic(rt, bootstrap, before, wallet, said, canary)
        ingress = await values_since(bootstrap, topics.INGRESS, before)
        assert not [v for v in ingress if wallet.encode() in v]


async def post_and_read_back(url: str, wallet: str, canary: str) -> str:
    """Post a turn holding `canary` for `wallet`'s alice, and read its working session back
    through the gateway until it shows the canary; the user's words."""
    async with httpx.AsyncClient(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as http:
        said = f"My locker code is {canary}."
        r = await http.post(
            f"{PREFIX}/turns/record",
            json={
                "agentWallet": wallet,
                "userAddress": "alice",
                "threadId": "t1",
                "userMessage": said,
                "assistantMessage": "Noted.",
            },
        )
        assert r.status_code == 202, r.text
        session_id = f"session:global:{wallet}:t1"
        working = await until(
            lambda: http.get(
                f"{PREFIX}/sessions/{session_id}/working",
                params={"agentWallet": wallet, "userAddress": "alice"},
            ),
            lambda r: r.status_code == 200,
            "the turn's working session, read through the gateway",
            timeout=120,
        )
        assert canary in working.text  # stored, and read back in clear
    return said


async def sealed_on_the_turns_topic(
    rt: Runtime,
    bootstrap: str,
    before: Mapping[tuple[str, int], int],
    wallet: str,
    said: str,
    canary: str,
) -> None:
    """The turn is stored once, and on the turns topic since `before` it is sealed for its
    tenant, with the canary nowhere in clear."""
    stored = rt.mongo[rt.settings.mongo.db]["transcript_turns"]
    turns = await stored.find({"agentWallet": wallet}).to_list(None)
    assert [m["content"] for m in turns[0]["messages"]][:1] == [said]
    assert len(turns) == 1

    # on the turns topic: the turn, sealed for its tenant, and the canary nowhere in clear
    values = await values_since(bootstrap, topics.TURNS, before)
    ours = [v for v in values if is_sealed(v) and envelope(v).tenant[0] == wallet]
    assert len(ours) == 1
    assert envelope(ours[0]).tenant == (wallet, "alice")
    assert not [v for v in values if canary.encode() in v]
    assert not [v for v in values if wallet.encode() in v and not is_sealed(v)]
