"""Scenario (issue 18 §4, §5): read-your-writes and item history, as an agent runtime uses them
through the SDK on the real stack (every group in-process, the rule-based extractor).

* `record_turn(wait=True)` returns once the turn is stored, its vector filled and the query
  cache told: the very next pre_turn sees it, with no polling — even one that had cached an
  answer from before the turn;
* `wait_processed(turn_id, ["facts"])` waits for the turn's extracted facts;
* a wait that cannot end raises `NotProcessed` naming the group that is behind;
* remember → update → delete → restore is the item's history, in order, with its causes and
  actors, and another tenant cannot read it.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from engine.adapters.mongo import MEMORY
from engine.retrieval.vector_index import ExactVectorIndex
from services.groups.app import running_groups
from services.runtime import Runtime
from services.sdk import MemoryClient, NotProcessed

pytestmark = pytest.mark.integration


def tenant() -> dict[str, Any]:
    return {"agentWallet": f"0xRyw{uuid.uuid4().hex[:10]}", "userAddress": "ana"}


async def test_a_waited_turn_is_seen_by_the_next_pre_turn_vector_filled_cache_told(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = rules_pipeline
    scope = {**tenant(), "threadId": "garden"}
    word = f"zorblat{uuid.uuid4().hex[:6]}"
    query = f"What is the {word} code?"
    # an answer from before the turn, cached for this query: only the invalidation of the
    # turn's change makes pre_turn compute it again
    assert word not in ((await client.context(query, scope)).prompt or "")

    turn = await client.record_turn(
        {
            **scope,
            "userMessage": f"The {word} code for the shed is 7731.",
            "assistantMessage": "Noted, 7731 for the shed.",
        },
        wait=True,
        timeout=60,
    )

    reply = await client.context(query, scope)  # at once: no polling, no sleep
    assert word in (reply.prompt or ""), reply.prompt
    rows = rt.mongo[rt.settings.mongo.db][MEMORY]
    row = await rows.find_one({"source": "session", "metadata.turnId": turn.turn_id})
    assert row is not None
    assert row["embeddingDim"] == rt.embedder.dimension  # the embedding stage filled it


async def test_concurrent_waits_each_see_their_own_turn(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    _, client = rules_pipeline
    scope = tenant()  # one tenant: the waits share partitions (and the reads of their offsets)
    words = [f"plimsk{uuid.uuid4().hex[:6]}" for _ in range(12)]
    await asyncio.gather(
        *(
            client.record_turn(
                {
                    **scope,
                    "threadId": f"thread{n % 3}",
                    "userMessage": f"Locker {word} holds my racket.",
                    "assistantMessage": "Got it.",
                },
                wait=True,
                timeout=90,
            )
            for n, word in enumerate(words)
        )
    )
    for n, word in enumerate(words):
        reply = await client.context(
            f"Which locker is {word}?", {**scope, "threadId": f"thread{n % 3}"}
        )
        assert word in (reply.prompt or ""), (word, reply.prompt)


async def test_wait_processed_waits_for_the_turns_facts(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    _, client = rules_pipeline
    scope = tenant()
    turn = await client.record_turn(
        {
            **scope,
            "threadId": "move",
            "userMessage": "I live in Tromsø now.",
            "assistantMessage": "Cold but beautiful!",
        }
    )
    await client.wait_processed(turn.turn_id, groups=["facts", "patterns"], timeout=60)
    facts = await client.newest_items(scope)
    assert any("Tromsø" in item["content"] for item in facts.items), facts.items


async def test_a_wait_that_cannot_end_names_the_group_that_is_behind(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, _ = rules_pipeline
    # a client of a deployment whose groups are not running (another group prefix)
    async with MemoryClient(
        rt.endpoints.kafka_bootstrap, group_prefix=f"nobody-{uuid.uuid4().hex[:8]}", wait_timeout=1
    ) as client:
        turn_body = {**tenant(), "threadId": "t", "userMessage": "hi", "assistantMessage": "yo"}
        with pytest.raises(NotProcessed) as raised:
            await client.record_turn(turn_body, wait=True)
    err = raised.value
    assert isinstance(err, TimeoutError)
    assert err.group_id.endswith(".transcripts")
    assert err.committed == -1
    assert "was published but not processed within 1 s" in str(err)
    assert "is the group running?" in str(err)


async def test_remember_update_delete_restore_is_kept_in_order_and_confined(
    rules_pipeline: tuple[Runtime, MemoryClient],
) -> None:
    _, client = rules_pipeline
    scope = tenant()
    event = await client.remember(
        {**scope, "content": "Ana's bike lock code is 5150."}, wait=True, timeout=60
    )
    [fact] = (await client.newest_items(scope)).items
    item_id = fact["id"]

    updated = await client.item(
        "update", item_id, scope, content="Ana's bike lock code is 5151.", actor="jwt:ana-app"
    )
    assert updated.items[0]["content"] == "Ana's bike lock code is 5151."
    assert (await client.item("delete", item_id, scope)).items[0]["status"] == "deleted"
    restored = await client.item("restore", item_id, scope)
    assert restored.items[0]["status"] == "active"

    reply = await client.history(item_id, scope)
    assert not reply.not_found, reply.error
    kinds = [entry["kind"] for entry in reply.history]
    assert kinds == ["created", "updated", "deleted", "restored"]
    ats = [entry["at"] for entry in reply.history]
    assert ats == sorted(ats)
    created, update, delete, restore = reply.history
    assert created["cause"] == {"kind": "event", "id": event.event_id, "name": "MemoryRemembered"}
    assert created["newContent"] == "Ana's bike lock code is 5150."
    assert update["oldContent"] == "Ana's bike lock code is 5150."
    assert update["newContent"] == "Ana's bike lock code is 5151."
    assert [e["cause"]["name"] for e in (update, delete, restore)] == [
        "item.update",
        "item.delete",
        "item.restore",
    ]
    assert update["cause"]["kind"] == "request"
    assert update["actor"] == "jwt:ana-app"
    assert delete["actor"] == restore["actor"] == client.actor
    assert reply.items[0]["content"] == "Ana's bike lock code is 5151."

    for outsider in (
        {**scope, "userAddress": "bob"},
        {"agentWallet": scope["agentWallet"]},
        {**tenant(), "userAddress": "ana"},
    ):
        other = await client.history(item_id, outsider)
        assert other.not_found, outsider
        assert other.history == []
        assert other.items == []


async def test_read_your_writes_holds_on_whichever_of_two_search_processes_answers(
    rules_pipeline: tuple[Runtime, MemoryClient], minilm: Any
) -> None:
    """Issue 28: a second search process (its own runtime and exact index) joins the search
    group; each follows the store by deltas, so a waited turn is seen by the next pre_turn
    whichever process the request's partition belongs to."""
    rt, client = rules_pipeline
    async with running_groups(rt.settings, ["search"], embedder=minilm, broker_logs=False) as two:
        indexes = [rt.search.index, two.search.index]
        assert all(isinstance(i, ExactVectorIndex) for i in indexes)
        scopes = [{**tenant(), "threadId": f"t{n}"} for n in range(8)]  # spread by partition
        for round_ in range(2):
            for n, scope in enumerate(scopes):
                word = f"quibbet{uuid.uuid4().hex[:6]}"
                await client.record_turn(
                    {
                        **scope,
                        "userMessage": f"The {word} is kept in drawer {n}.",
                        "assistantMessage": "Noted.",
                    },
                    wait=True,
                    timeout=60,
                )
                reply = await client.context(f"Where is the {word}?", scope, timeout=30)
                assert word in (reply.prompt or ""), (round_, n, reply.prompt)
        loads = [(i.loads, i.deltas, i.tenants) for i in indexes if isinstance(i, ExactVectorIndex)]
    # each process answered some tenants; after a state's first load, only deltas: every full
    # load is the first of a state the process holds (a rebalance on a loaded machine may
    # move a partition, and its tenants' first loads, to the other process)
    assert all(full > 0 for full, _, _ in loads), loads
    assert all(full == held for full, _, held in loads), loads
    assert sum(d for _, d, _ in loads) >= len(scopes)
