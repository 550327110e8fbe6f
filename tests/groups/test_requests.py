"""Request-reply groups on the test broker: the search group answers `ContextRequest`,
`LayerSearchRequest` and `RerankRequest`; the items group `ItemRequest` and
`SessionRequest`; the admin group `AdminRequest`. Invalid requests are answered with
`error` set, never left to time out."""

from __future__ import annotations

from engine.scoping import tenant_filter
from schemas import topics
from schemas.events import MemoryRemembered
from schemas.requests import (
    AdminReply,
    AdminRequest,
    ContextReply,
    ContextRequest,
    ItemReply,
    ItemRequest,
    LayerSearchReply,
    LayerSearchRequest,
    RerankDocument,
    RerankReply,
    RerankRequest,
    SessionReply,
    SessionRequest,
)
from tests.groups.conftest import Start, scope, turn


async def test_pre_turn_context_is_answered_by_the_search_group(start: Start) -> None:
    tenant = scope()
    other = scope()
    thread = tenant.model_copy(update={"thread_id": "t1"})
    async with start(["transcripts", "facts", "invalidation", "search"]) as g:
        await g.publish(turn(tenant, "My dog is called Rex.", "Rex is a fine name."), topics.TURNS)
        await g.publish(
            MemoryRemembered(scope=tenant, content="I am allergic to peanuts."), topics.REMEMBER
        )
        reply = await g.request(
            ContextRequest(scope=thread, query="what is my dog called?"),
            topics.SEARCH,
            ContextReply,
        )
        assert reply.error is None
        assert "Rex" in (reply.prompt or "")
        again = await g.request(
            ContextRequest(scope=thread, query="what is my dog called?"),
            topics.SEARCH,
            ContextReply,
        )
        assert again.cached
        stranger = await g.request(
            ContextRequest(scope=other, query="what is my dog called?"), topics.SEARCH, ContextReply
        )
        assert "Rex" not in (stranger.prompt or "")
        layers = await g.request(
            LayerSearchRequest(scope=tenant, query="peanuts", layers=["vectors"]),
            topics.LAYER_SEARCH,
            LayerSearchReply,
        )
        assert any("peanuts" in str(hit) for hit in layers.layers.get("vectors", []))
    assert g.letters == []


async def test_a_write_invalidates_the_cached_context(start: Start) -> None:
    tenant = scope()
    thread = tenant.model_copy(update={"thread_id": "t1"})
    request = ContextRequest(scope=thread, query="where do I live?")
    async with start(["transcripts", "invalidation", "search"]) as g:
        first = await g.request(request, topics.SEARCH, ContextReply)
        await g.publish(turn(tenant, "I live in Porto.", "Porto is a great city."), topics.TURNS)
        second = await g.request(request, topics.SEARCH, ContextReply)
    assert not second.cached
    assert "Porto" in (second.prompt or "")
    assert "Porto" not in (first.prompt or "")


async def test_an_invalid_request_is_answered_with_an_error(start: Start) -> None:
    async with start(["search"]) as g:
        answer = await g.broker.request(b'{"query": ""}', topics.SEARCH, timeout=5)
    assert ContextReply.model_validate_json(answer.body).error


async def test_documents_are_reranked_locally(start: Start) -> None:
    docs = [RerankDocument(content="bananas are yellow"), RerankDocument(content="the sky is blue")]
    async with start(["search"]) as g:
        reply = await g.request(
            RerankRequest(query="what colour is the sky", documents=docs),
            topics.RERANK,
            RerankReply,
        )
    assert reply.error is None
    assert reply.results[0].index == 1


async def test_an_item_is_read_updated_and_deleted_within_its_scope(start: Start) -> None:
    tenant = scope()
    async with start(["facts", "items"]) as g:
        await g.publish(
            MemoryRemembered(scope=tenant, content="I drink oat milk."), topics.REMEMBER
        )
        listed = await g.request(ItemRequest(scope=tenant, op="list"), topics.ITEMS, ItemReply)
        [item] = listed.items
        got = await g.request(
            ItemRequest(scope=tenant, op="get", id=item["id"]), topics.ITEMS, ItemReply
        )
        assert got.items[0]["content"] == "I drink oat milk."
        elsewhere = await g.request(
            ItemRequest(scope=scope(), op="get", id=item["id"]), topics.ITEMS, ItemReply
        )
        assert elsewhere.not_found
        updated = await g.request(
            ItemRequest(scope=tenant, op="update", id=item["id"], content="I drink soy milk."),
            topics.ITEMS,
            ItemReply,
        )
        assert updated.items[0]["content"] == "I drink soy milk."
        deleted = await g.request(
            ItemRequest(scope=tenant, op="delete", id=item["id"]), topics.ITEMS, ItemReply
        )
        assert deleted.error is None
        rows = await g.rt.memory.active_rows(tenant_filter(tenant, durable=True))
    assert rows == []
    assert {c.producer for c in g.changes} == {"facts", "items"}


async def test_forget_erases_the_user_and_announces_it_list_as_of_reads_the_past(
    start: Start,
) -> None:
    alice = scope()
    bob = scope(alice.agent_wallet, userAddress="bob")
    async with start(["transcripts", "facts", "items", "invalidation", "search"]) as g:
        for tenant in (alice, bob):
            await g.publish(turn(tenant, "My dog is called Rex.", "Nice name."), topics.TURNS)
            await g.publish(MemoryRemembered(scope=tenant, content="I drink tea."), topics.REMEMBER)
        [fact] = (
            await g.request(ItemRequest(scope=alice, op="list"), topics.ITEMS, ItemReply)
        ).items
        past = await g.request(
            ItemRequest(scope=alice, op="list", as_of=fact["createdAt"] - 1),
            topics.ITEMS,
            ItemReply,
        )
        assert past.items == []
        ranked = await g.request(
            LayerSearchRequest(scope=alice, query="what is my dog called?"),
            topics.LAYER_SEARCH,
            LayerSearchReply,
        )
        assert sum(ranked.totals.values()) == len(ranked.items) > 0
        scores = [i.score for i in ranked.items if i.score is not None]
        assert scores == sorted(scores, reverse=True)

        erased = await g.request(ItemRequest(scope=alice, op="forget"), topics.ITEMS, ItemReply)
        assert erased.error is None
        assert erased.erased is not None
        assert (erased.erased["memory"], erased.erased["transcripts"]) == (2, 1)  # fact, turn
        after = await g.request(
            ContextRequest(scope=alice, query="what is my dog called?"), topics.SEARCH, ContextReply
        )
        assert "Rex" not in (after.prompt or "")
        kept = await g.request(
            ContextRequest(scope=bob, query="what is my dog called?"), topics.SEARCH, ContextReply
        )
        assert "Rex" in (kept.prompt or "")
        no_user = await g.request(
            ItemRequest(scope=scope(alice.agent_wallet, userAddress=""), op="forget"),
            topics.ITEMS,
            ItemReply,
        )
        assert "needs a userAddress" in (no_user.error or "")
    forgotten = [c for c in g.changes if c.producer == "items"]
    assert [(c.scope.user_address, len(c.layers)) for c in forgotten] == [("alice", 6)]


async def test_a_working_session_is_read_edited_and_compressed(start: Start) -> None:
    tenant = scope()
    async with start(["transcripts", "items"]) as g:
        await g.publish(turn(tenant, "I prefer window seats.", "Noted."), topics.TURNS)
        [working] = await g.rt.stores.working.recent(tenant_filter(tenant, durable=False), 1)
        session = working.session_id

        async def ask(**fields: object) -> SessionReply:
            request = SessionRequest.model_validate({"session_id": session, **fields})
            return await g.request(request, topics.SESSIONS, SessionReply)

        got = await ask(scope=tenant, op="get")
        assert got.session is not None
        assert "I prefer window seats." in " ".join(got.session["workingMemory"]["context"])
        edited = await ask(scope=tenant, op="update", state={"step": 2})
        assert edited.session is not None
        assert edited.session["workingMemory"]["state"]["step"] == 2
        compressed = await ask(scope=tenant, op="compress")
        assert compressed.compression is not None
        assert compressed.compression["stored"]
        missing = await ask(scope=scope(), op="get")
    assert missing.not_found
    assert ["working"] in [c.layers for c in g.changes if c.producer == "items"]


async def test_admin_stats_count_the_tenants_rows(start: Start) -> None:
    tenant = scope()
    async with start(["transcripts", "facts", "admin"]) as g:
        await g.publish(turn(tenant, "Hello there.", "Hi!"), topics.TURNS)
        await g.publish(MemoryRemembered(scope=tenant, content="I like jazz."), topics.REMEMBER)
        reply = await g.request(AdminRequest(op="stats", scope=tenant), topics.ADMIN, AdminReply)
    assert reply.error is None
    assert reply.result is not None
    assert reply.result["totalTranscripts"] == 1
    assert reply.result["totalVectors"] >= 1


async def test_admin_lists_job_records_newest_first_within_the_scope(start: Start) -> None:
    # issue 17: job records were readable one at a time only (jobs.get)
    from engine.upkeep.jobs import JobRecord
    from schemas.admin import JobRecordsResponse, result_of

    tenant = scope()
    wallet = tenant.agent_wallet
    async with start(["admin"]) as g:
        for record in (
            JobRecord("j1", "decay_update", "completed", 1, {"agentWallet": wallet}, 5),
            JobRecord("j2", "consolidate", "failed", 2, {"agentWallets": ["0xOther", wallet]}),
            JobRecord("j3", "cleanup", "completed", 3, {}),
        ):
            await g.rt.jobs.finish(record)

        async def listed(**fields: object) -> list[str]:
            reply = await g.request(
                AdminRequest(op="jobs.list", **fields), topics.ADMIN, AdminReply
            )
            assert reply.error is None, reply.error
            return [job.jobId for job in result_of(reply, JobRecordsResponse).jobs]

        assert await listed() == ["j3", "j2", "j1"]
        assert await listed(scope=tenant) == ["j2", "j1"]
        assert await listed(scope=tenant, status="completed") == ["j1"]
        assert await listed(status="failed", limit=1) == ["j2"]
        bad = await g.request(
            AdminRequest.model_construct(op="jobs.list", status="lost"), topics.ADMIN, AdminReply
        )
    assert bad.error is not None
    assert "status" in bad.error
