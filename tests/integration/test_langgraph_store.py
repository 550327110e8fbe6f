"""`MnemoStore` (issue 18 §2) on the real stack: a compiled LangGraph graph whose nodes
write and read long-term memory through `store`, LangGraph's own store expectations (those
its `InMemoryStore` is tested against, restated here), and the tenant boundary."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any, TypedDict, cast

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError

from services.integrations.langgraph import MnemoStore
from services.runtime import Runtime
from services.sdk.client import MemoryClient

pytestmark = pytest.mark.integration


class Conversation(TypedDict, total=False):
    said: str
    question: str
    recalled: list[str]


def memory_graph(store: MnemoStore) -> Any:
    """remember → recall: the first node stores what the user said as a memory, the second
    recalls the memories closest to the question (both through the injected `store`)."""

    async def remember(state: Conversation, *, store: BaseStore) -> Conversation:
        if state.get("said"):
            await store.aput(("memories",), uuid.uuid4().hex, {"text": state["said"]})
        return {}

    async def recall(state: Conversation, *, store: BaseStore) -> Conversation:
        if not state.get("question"):
            return {"recalled": []}
        hits = await store.asearch(("memories",), query=state["question"], limit=3)
        return {"recalled": [hit.value["text"] for hit in hits]}

    builder = StateGraph(Conversation)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


async def test_a_compiled_graph_remembers_across_threads_and_only_for_its_user(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xGraph")
    alice = memory_graph(MnemoStore(client, agent=agent, user="alice", index_fields=["text"]))
    for i, said in enumerate(
        ("I am allergic to peanuts.", "My sister Ana lives in Lisbon.", "I play the cello.")
    ):
        await alice.ainvoke({"said": said}, {"configurable": {"thread_id": f"t{i}"}})

    out = await alice.ainvoke(
        {"question": "Which food must I never eat?"}, {"configurable": {"thread_id": "later"}}
    )
    assert out["recalled"][0] == "I am allergic to peanuts."
    out = await alice.ainvoke({"question": "Where does my sister live?"})
    assert out["recalled"][0] == "My sister Ana lives in Lisbon."

    # the memories are mnemostream facts of alice: pre_turn recalls them too
    reply = await client.context(
        "Which food must I never eat?", {"agentWallet": agent, "userAddress": "alice"}
    )
    assert "allergic to peanuts" in (reply.prompt or "")

    # another user of the same agent, and the agent's user-less memory, see none of it
    for user in ("bob", None):
        store = MnemoStore(client, agent=agent, user=user)
        other = memory_graph(store)
        assert (await other.ainvoke({"question": "Which food must I never eat?"}))["recalled"] == []
        assert await store.asearch(("memories",)) == []
        assert await store.alist_namespaces() == []


async def test_put_get_update_delete_keep_langgraphs_item_contract(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xItems"), user="uma")
    ns = ("users", "uma", "prefs")
    assert await store.aget(ns, "theme") is None
    await store.aput(ns, "theme", {"theme": "dark", "size": 12})
    first = await store.aget(ns, "theme")
    assert first is not None
    assert (first.namespace, first.key, first.value) == (ns, "theme", {"theme": "dark", "size": 12})
    assert isinstance(first.created_at, datetime)
    assert first.created_at.tzinfo is not None

    await store.aput(ns, "theme", {"theme": "light"})
    second = await store.aget(ns, "theme")
    assert second is not None
    assert second.value == {"theme": "light"}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at

    # keys and labels are exact: case matters, and unicode round-trips
    await store.aput(ns, "Theme", {"emoji": "🌙", "text": "nuit étoilée"})
    upper = await store.aget(ns, "Theme")
    assert upper is not None
    assert upper.value == {"emoji": "🌙", "text": "nuit étoilée"}
    assert (await store.aget(ns, "theme")).value == {"theme": "light"}  # type: ignore[union-attr]
    assert await store.aget(("users", "Uma", "prefs"), "theme") is None

    await store.adelete(ns, "theme")
    assert await store.aget(ns, "theme") is None
    await store.adelete(ns, "theme")  # deleting a missing item is no error
    await store.aput(ns, "theme", {"theme": "sepia"})  # a deleted item can be put again
    again = await store.aget(ns, "theme")
    assert again is not None
    assert again.value == {"theme": "sepia"}

    # one batch: results in op order, a put then a get of the same key reads the put
    from langgraph.store.base import GetOp, PutOp

    results = await store.abatch(
        [PutOp(ns, "batch", {"n": 1}), GetOp(ns, "batch"), PutOp(ns, "batch", None)]
    )
    assert results[0] is None
    assert results[1] is not None
    assert results[1].value == {"n": 1}  # type: ignore[union-attr]
    assert await store.aget(ns, "batch") is None


async def test_listing_and_filtering_follow_langgraphs_expectations(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xList"), user="ivy")
    spaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
    ]
    for i, ns in enumerate(spaces):
        await store.aput(ns, f"id_{i}", {"data": f"value_{i:02d}", "i": i, "even": i % 2 == 0})

    assert sorted(await store.alist_namespaces()) == sorted(spaces)
    assert await store.alist_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(max_depth=1) == [("a",), ("b",), ("users",)]
    assert await store.alist_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert await store.alist_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(prefix=("nonexistent",)) == []

    # a search without a query lists the prefix's items; pages add up to the full listing
    full = [(s.namespace, s.key) for s in await store.asearch(("a",), limit=100)]
    assert sorted(full) == sorted((ns, f"id_{i}") for i, ns in enumerate(spaces) if ns[0] == "a")
    paged = [
        (s.namespace, s.key)
        for offset in range(0, len(full), 2)
        for s in await store.asearch(("a",), limit=2, offset=offset)
    ]
    assert paged == full
    assert len(await store.asearch(())) == len(spaces)
    assert {s.key for s in await store.asearch(("a",), filter={"even": True})} == {
        "id_0",
        "id_2",
        "id_4",
    }
    assert {s.key for s in await store.asearch((), filter={"i": {"$gte": 4, "$lt": 6}})} == {
        "id_4",
        "id_5",
    }
    assert {s.key for s in await store.asearch((), filter={"data": {"$ne": "value_00"}})} == {
        f"id_{i}" for i in range(1, len(spaces))
    }
    assert all(s.score is None for s in await store.asearch(()))


async def test_natural_language_search_ranks_filters_and_skips_unindexed_items(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xSearch"), user="zoe", index_fields=["text"])
    docs = {
        "pie": {"text": "Zoe bakes an apple pie every Sunday.", "kind": "habit"},
        "car": {"text": "Zoe's car is a red hatchback.", "kind": "fact"},
        "job": {"text": "Zoe works as a nurse at the city hospital.", "kind": "fact"},
    }
    for key, value in docs.items():
        await store.aput(("docs",), key, value)
    await store.aput(("other",), "pie2", {"text": "Zoe also likes apple pie.", "kind": "habit"})
    await store.aput(("docs",), "secret", {"text": "Zoe bakes apple pie."}, index=False)

    hits = await store.asearch(("docs",), query="What does Zoe bake on Sundays?")
    assert hits[0].key == "pie"
    assert hits[0].score is not None
    assert all(h.namespace == ("docs",) for h in hits)
    # not indexed: as in LangGraph's stores, found without a score, after every scored item
    assert hits[-1].key == "secret"
    assert hits[-1].score is None
    scores = [h.score for h in hits[:-1]]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]

    facts = await store.asearch(("docs",), query="What is Zoe's job?", filter={"kind": "fact"})
    assert facts
    assert facts[0].key == "job"
    assert {h.key for h in facts} <= {"car", "job"}
    every = await store.asearch((), query="apple pie", limit=5)
    assert {"pie", "pie2"} <= {h.key for h in every}
    assert await store.asearch(("docs",), query="pie", limit=15, offset=10) == []


async def test_bad_operations_are_refused_before_anything_is_written(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xBad"), user="rex")
    for namespace in ((), ("langgraph", "x"), ("a.b",), ("ok", "")):
        with pytest.raises(InvalidNamespaceError):
            await store.aput(namespace, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aget(("a.b",), "k")
    with pytest.raises(ValueError, match="positive number of minutes"):
        await store.aput(("ok",), "k", {"v": 1}, ttl=-5)
    with pytest.raises(ValueError, match="at most 32000"):
        await store.aput(("ok",), "big", {"v": "x" * 40_000})
    from langgraph.store.base import PutOp

    # a bad op anywhere in a batch stops the whole batch before its first op runs
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("ok",), "first", {"v": 1}), PutOp(("a.b",), "k", {"v": 2})])
    assert await store.alist_namespaces() == []
    with pytest.raises(ValueError, match="agentWallet"):
        MnemoStore(client, agent="")


async def test_the_synchronous_api_works_from_a_worker_thread(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """A graph run with `invoke` (synchronous nodes) in a thread, as LangGraph's sync API
    is used; a synchronous call on the client's own loop is refused, never a deadlock."""
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xSync"), user="sam", index_fields=["text"])

    def note(state: Conversation, *, store: BaseStore) -> Conversation:
        store.put(("notes",), "n1", {"text": state["said"]})
        item = store.get(("notes",), "n1")
        return {"recalled": [item.value["text"]] if item else []}

    builder = StateGraph(Conversation)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    graph = builder.compile(store=store)
    out = await asyncio.to_thread(graph.invoke, {"said": "Sam parks on level 3."})
    assert out["recalled"] == ["Sam parks on level 3."]
    assert [s.key for s in await asyncio.to_thread(store.search, ("notes",))] == ["n1"]
    with pytest.raises(asyncio.InvalidStateError):
        store.get(("notes",), "n1")


async def test_a_search_right_after_a_put_reads_the_new_value_not_a_cached_answer(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Issue 30: every LangGraph store reads its own writes. The items group bumps the
    changed scope's cache namespace before it replies to the update, so the next search is
    never answered from the query cache of before the put."""
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xFresh"), user="una", index_fields=["text"])
    await store.aput(("docs",), "hobby", {"text": "Una collects old stamps."})
    await store.aput(("docs",), "pet", {"text": "Una has a grey cat called Mist."})
    question = "Which instrument does Una play in the orchestra?"
    before = await store.asearch(("docs",), query=question)
    assert before == [] or before[0].value["text"] != "Una plays the cello in the orchestra."

    await store.aput(("docs",), "hobby", {"text": "Una plays the cello in the orchestra."})
    after = await store.asearch(("docs",), query=question)

    assert after
    assert after[0].key == "hobby"
    assert after[0].value == {"text": "Una plays the cello in the orchestra."}


async def test_concurrent_puts_and_deletes_of_one_key_never_raise_and_settle(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Issue 30: a put that raced a delete of its key raised `RequestFailed` (the update
    found the item deleted); LangGraph's stores take any interleaving."""
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xRace"), user="rui")
    await store.aput(("race",), "k", {"n": -1})
    ops = [
        store.aput(("race",), "k", {"n": n}) if n % 2 == 0 else store.adelete(("race",), "k")
        for n in range(12)
    ]

    await asyncio.gather(*ops)  # none raises

    final = await store.aget(("race",), "k")
    assert final is None or final.value["n"] in {n for n in range(12) if n % 2 == 0}
    await store.aput(("race",), "k", {"n": 99})  # and the key goes on like any other
    again = await store.aget(("race",), "k")
    assert again is not None
    assert again.value == {"n": 99}


class DeleteBeforeFirstWrite:
    """A client on which a delete of the item lands just before a put's write request: the
    interleaving of a put racing a delete, made certain."""

    def __init__(self, inner: MemoryClient, item_id: str) -> None:
        self._inner = inner
        self._item_id = item_id
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _race(self, scope: Any) -> None:
        if not self.raced:
            self.raced = True
            deleted = await self._inner.item("delete", self._item_id, scope)
            assert not deleted.not_found

    async def write_items(self, scope: Any, writes: Any, **kwargs: Any) -> Any:
        await self._race(scope)
        return await self._inner.write_items(scope, writes, **kwargs)

    async def write_items_logged(self, scope: Any, writes: Any, **kwargs: Any) -> Any:
        await self._race(scope)  # a put alone is published without waiting for its reply
        return await self._inner.write_items_logged(scope, writes, **kwargs)


async def test_a_put_whose_item_is_deleted_just_before_its_write_brings_it_back(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Issue 30: the put is the last write, so it wins over the delete that came first:
    the item is back, with the put's value, created anew."""
    _, client = rules_pipeline
    agent = unique("0xRaced")
    first = MnemoStore(client, agent=agent, user="rui")
    await first.aput(("race",), "k", {"n": 1})
    before = await first.aget(("race",), "k")
    assert before is not None
    racing = DeleteBeforeFirstWrite(client, first.item_id(("race",), "k"))
    store = MnemoStore(cast(MemoryClient, racing), agent=agent, user="rui")

    await store.aput(("race",), "k", {"n": 2})  # was: RequestFailed "… not found"

    assert racing.raced
    got = await store.aget(("race",), "k")
    assert got is not None
    assert got.value == {"n": 2}
    assert got.created_at >= before.updated_at
