"""`MnemoStore` against the contract LangGraph documents for its stores (issue 30), on the real
stack: a query search ranks every item of the namespace prefix that the filter admits (no
relevance floor, no top-N cut, filter before `limit`/`offset`); an item indexed by several
fields is scored by its best field; `index_config`; TTLs (expiry, refresh on read, the
sweep); an asynchronous call from another event loop than the client's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.integrations.langgraph import MnemoStore
from services.runtime import Runtime
from services.sdk.client import MemoryClient

pytestmark = pytest.mark.integration

TOPICS = [
    "the city library opens at nine",
    "a recipe for lentil soup with cumin",
    "training schedule for a marathon",
    "how to repair a bicycle puncture",
    "notes on the history of Lisbon",
    "a list of jazz records to buy",
    "the dentist appointment is on Friday",
    "tips for growing tomatoes on a balcony",
    "the wifi password changed last week",
    "a chess opening called the Sicilian",
    "rules of the office parking lot",
    "birthday ideas for a seven year old",
]


async def test_a_query_ranks_every_item_of_the_prefix_past_any_cut(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xRankAll")
    store = MnemoStore(client, agent=agent, user="ann", index_fields=["text"])
    # 24 items, more than the vectors layer's 20 hits, most unrelated to the query
    keys = [f"k{i:02d}" for i in range(24)]
    for i, key in enumerate(keys):
        text = TOPICS[i % len(TOPICS)] + f" (note {i})"
        await store.aput(
            ("notes", "ann"), key, {"text": text, "color": "teal" if i in (3, 11, 19) else "grey"}
        )

    hits = await store.asearch(("notes",), query="quantum chromodynamics lecture", limit=50)
    assert sorted(h.key for h in hits) == keys  # every item, none dropped below a floor
    scores = [h.score for h in hits]
    assert None not in scores
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]

    # limit and offset apply after ranking: the pages add up to the full ranking
    pages = [
        await store.asearch(("notes",), query="quantum chromodynamics lecture", limit=10, offset=o)
        for o in (0, 10, 20)
    ]
    assert [len(p) for p in pages] == [10, 10, 4]
    assert [h.key for p in pages for h in p] == [h.key for h in hits]

    # the filter applies before ranking, whatever the namespace's size: three teal items
    # unrelated to the query are all found
    teal = await store.asearch(("notes",), query="soup recipe", filter={"color": "teal"})
    assert sorted(h.key for h in teal) == ["k03", "k11", "k19"]

    # another user of the agent shares the namespace labels, never the items
    bob = MnemoStore(client, agent=agent, user="bob", index_fields=["text"])
    assert await bob.asearch(("notes",), query="soup recipe") == []
    assert await bob.asearch(("notes",)) == []


async def test_an_item_is_scored_by_its_best_indexed_field(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(
        client, agent=unique("0xFields"), user="fay", index={"fields": ["title", "body"]}
    )
    assert store.index_config is not None
    assert store.index_config["fields"] == ["title", "body"]
    await store.aput(("docs",), "short", {"title": "weekly cello lessons"})
    await store.aput(
        ("docs",),
        "long",
        {
            "title": "weekly cello lessons",
            "body": "The invoice for the roof repair was paid by bank transfer in March.",
            "skip": "weekly cello lessons weekly cello lessons",
        },
    )
    hits = {h.key: h.score for h in await store.asearch(("docs",), query="weekly cello lessons")}
    # the long item's title is the short item's only field: the same best score, not one
    # diluted by its body
    assert hits["long"] == pytest.approx(hits["short"], abs=1e-4)
    assert hits["short"] == pytest.approx(1.0, abs=1e-3)

    # put(index=[...]) names the item's own fields: only "skip" is embedded
    await store.aput(
        ("docs",), "own", {"title": "x", "skip": "tax return deadline"}, index=["skip"]
    )
    best = await store.asearch(("docs",), query="tax return deadline", limit=1)
    assert best[0].key == "own"
    assert best[0].score == pytest.approx(1.0, abs=1e-3)


async def test_items_expire_refresh_on_read_and_are_swept(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xTtl"), user="tia", index={"fields": ["text"]})
    assert store.supports_ttl
    ns = ("ttl",)
    await store.aput(ns, "brief", {"text": "a short lived note"}, ttl=1 / 60)  # one second
    await store.aput(ns, "kept", {"text": "a note kept for good"})
    assert await store.aget(ns, "brief") is not None
    await asyncio.sleep(1.5)
    assert await store.aget(ns, "brief") is None  # expired: gone for every read
    assert [h.key for h in await store.asearch(ns, query="short lived note")] == ["kept"]
    assert [h.key for h in await store.asearch(ns)] == ["kept"]

    # a read starts the TTL again; a read that does not refresh leaves it
    await store.aput(ns, "renewed", {"text": "renewed on every read"}, ttl=3 / 60)  # 3 s
    for _ in range(3):
        await asyncio.sleep(1.2)
        assert await store.aget(ns, "renewed") is not None  # refresh_ttl: True by default
    await asyncio.sleep(1.5)
    assert await store.aget(ns, "renewed", refresh_ttl=False) is not None
    await asyncio.sleep(2.0)
    assert await store.aget(ns, "renewed", refresh_ttl=False) is None

    # the sweep deletes expired items nobody reads again
    for key in ("a", "b"):
        await store.aput(ns, key, {"text": f"swept {key}"}, ttl=1 / 60)
    await asyncio.sleep(1.5)
    assert await store.sweep_ttl() == 2
    for key in ("a", "b"):
        assert (await client.item("get", store.item_id(ns, key), store.scope)).not_found
    assert await store.sweep_ttl() == 0
    assert await store.aget(ns, "kept") is not None


async def test_an_async_call_from_another_loop_runs_on_the_clients_loop(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    # built outside any loop of the client's (in a worker thread): the store takes the
    # client's own loop, not whichever was running when it was built
    store = await asyncio.to_thread(lambda: MnemoStore(client, agent=unique("0xLoops"), user="leo"))

    async def elsewhere() -> Any:
        await store.aput(("x",), "k", {"text": "from another loop"})
        return await store.aget(("x",), "k")

    # a new event loop in a worker thread, while the client's loop keeps running here
    item = await asyncio.wait_for(asyncio.to_thread(asyncio.run, elsewhere()), timeout=60)
    assert item is not None
    assert item.value == {"text": "from another loop"}
    assert (await store.aget(("x",), "k")) is not None
