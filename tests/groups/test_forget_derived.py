"""Forgetting a remembered fact forgets what the graph read from it (issue 32), through the
facts and items groups on the in-memory runtime: the remembered texts get the untyped links
a turn gets, each graph row records the fact it came from, and a soft delete, a hard delete
or a bulk delete of the fact leaves none of its words in any graph row or in their history."""

from __future__ import annotations

from engine.records import turn_row_id
from schemas import topics
from schemas.events import MemoryRemembered
from schemas.requests import ItemReply, ItemRequest
from schemas.scope import Scope
from services.runtime import Runtime
from tests.groups.conftest import Groups, Start, scope, turn

EMPLOYED = "These days I'm employed by Initech as an analyst."
OFFICE = "Initech's head office sits in Austin, Texas."


def graph_texts(rt: Runtime, tenant: Scope, *, sources: bool = False) -> str:
    """Every text of the tenant's graph rows (entity rows, relations) and of their item
    history (`sources`: of every item's, the facts' too), as one string to search."""
    memory, relations, history = rt.stores.memory, rt.stores.relations, rt.stores.history
    user = tenant.user_address
    rows = [r for r in memory.rows() if r.source == "entity" and r.scope.user_address == user]  # type: ignore[attr-defined]
    links = [r for r in relations.rows() if r.scope.user_address == user]  # type: ignore[attr-defined]
    changes = [
        c
        for _, c in history._changes.values()  # type: ignore[attr-defined]
        if sources or c.item_id.startswith("ent_")
    ]
    return "\n".join(
        [
            *(f"{r.content} {r.metadata}" for r in rows),
            *(f"{r.source_name} {r.target_name} {r.metadata}" for r in links),
            *(f"{c.old_content} {c.new_content} {c.details}" for c in changes),
        ]
    )


async def remembered(g: Groups, tenant: Scope, text: str) -> str:
    await g.publish(MemoryRemembered(scope=tenant, content=text), topics.REMEMBER)
    listed = await g.request(ItemRequest(scope=tenant, op="list"), topics.ITEMS, ItemReply)
    found: str = next(i["id"] for i in listed.items if i["content"] == text)
    return found


async def test_remembered_texts_are_linked_and_forgetting_one_forgets_its_words(
    start: Start,
) -> None:
    tenant = scope()
    async with start(["facts", "items"]) as g:
        employed = await remembered(g, tenant, EMPLOYED)
        office = await remembered(g, tenant, OFFICE)
        links = {
            (r.source_name, r.type, r.target_name): r.metadata.get("evidence")
            for r in g.rt.stores.relations.rows()  # type: ignore[attr-defined]
        }
        assert links[("user", "MENTIONS", "Initech")] == EMPLOYED
        assert links[("Initech", "RELATED", "Austin")] == OFFICE
        assert "head office" in graph_texts(g.rt, tenant)

        deleted = await g.request(
            ItemRequest(scope=tenant, op="delete", id=office), topics.ITEMS, ItemReply
        )
        assert deleted.error is None
        left = graph_texts(g.rt, tenant)
        assert "head office" not in left
        assert "Austin" not in left
        assert EMPLOYED in left  # the other fact's links stay

        # a soft-deleted fact keeps its own words (it can be restored); a purged one not
        assert "head office" in graph_texts(g.rt, tenant, sources=True)
        for fact in (office, employed):
            purged = await g.request(
                ItemRequest(scope=tenant, op="delete", id=fact, hard=True),
                topics.ITEMS,
                ItemReply,
            )
            assert purged.error is None
        left = graph_texts(g.rt, tenant, sources=True)
    assert "employed" not in left
    assert "Initech" not in left
    assert "head office" not in left
    assert g.letters == []


async def test_a_bulk_delete_forgets_what_the_graph_read_from_the_row(start: Start) -> None:
    tenant = scope()
    async with start(["facts", "items"]) as g:
        office = await remembered(g, tenant, OFFICE)
        request = ItemRequest.model_validate(
            {
                "scope": tenant.model_dump(by_alias=True),
                "op": "write",
                "writes": [{"id": office, "op": "delete"}],
            }
        )
        reply = await g.request(request, topics.ITEMS, ItemReply)
        assert reply.error is None
        left = graph_texts(g.rt, tenant)
    assert "head office" not in left
    assert "Austin" not in left


async def test_forgetting_the_user_leaves_no_graph_row_nor_its_words(start: Start) -> None:
    tenant = scope()
    async with start(["facts", "items"]) as g:
        await remembered(g, tenant, EMPLOYED)
        await remembered(g, tenant, OFFICE)
        assert "head office" in graph_texts(g.rt, tenant)
        erased = await g.request(ItemRequest(scope=tenant, op="forget"), topics.ITEMS, ItemReply)
        assert erased.erased is not None
        assert erased.erased["relations"] >= 2
        left = graph_texts(g.rt, tenant, sources=True)
    for said in ("head office", "Austin", "employed", "Initech"):
        assert said not in left


async def test_deleting_a_turn_forgets_the_links_read_from_it(start: Start) -> None:
    tenant = scope()
    said = turn(tenant, EMPLOYED, "Noted.")
    row = turn_row_id(tenant.agent_wallet, said.session_id, said.turn_id)
    async with start(["transcripts", "extraction", "facts", "items"]) as g:
        await g.publish(said, topics.TURNS)
        assert EMPLOYED in graph_texts(g.rt, tenant)
        g.changes.clear()
        deleted = await g.request(
            ItemRequest(scope=tenant, op="delete", id=row), topics.ITEMS, ItemReply
        )
        assert deleted.error is None
        left = graph_texts(g.rt, tenant)
    assert "employed" not in left
    assert "Initech" not in left
    # the graph layer is told too: a turn row alone would only change the vectors
    assert [c.layers for c in g.changes] == [["graph", "vectors"]]
