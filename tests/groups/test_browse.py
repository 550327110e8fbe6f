"""The console's views on the admin group (`memory.browse`, `graph.browse`): the exact
tenant's stored rows with their scores, dates and validity, and its entity graph; nothing of
another user or agent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from schemas import topics
from schemas.events import EntityItem, FactItem, FactsExtracted, MemoryRemembered, RelationItem
from schemas.ids import to_ms
from schemas.requests import AdminReply, AdminRequest
from schemas.scope import Scope
from tests.groups.conftest import Groups, Start, scope

SAID = datetime(2026, 3, 1, 12, tzinfo=UTC)


def extracted(tenant: Scope, city: str, at: datetime) -> FactsExtracted:
    return FactsExtracted(
        occurred_at=at,
        scope=tenant,
        turn_id=f"turn-{city}",
        session_id=f"session-{city}",
        extractor="rules",
        facts=[FactItem(text=f"I live in {city}", type="context", confidence=0.9, slot="home")],
        entities=[EntityItem(name="Ana", type="person"), EntityItem(name=city, type="place")],
        relations=[RelationItem(source="Ana", type="LIVES_IN", target=city)],
    )


async def browse(g: Groups, tenant: Scope, **fields: object) -> AdminReply:
    request = AdminRequest.model_validate({"op": "memory.browse", "scope": tenant, **fields})
    return await g.request(request, topics.ADMIN, AdminReply)


async def test_memory_browse_lists_the_tenants_rows_with_validity(start: Start) -> None:
    tenant, neighbour = scope(), scope()
    async with start(["facts", "admin"]) as g:
        await g.publish(extracted(tenant, "Lisbon", SAID), topics.FACTS)
        await g.publish(extracted(tenant, "Porto", SAID + timedelta(days=9)), topics.FACTS)
        await g.publish(MemoryRemembered(scope=neighbour, content="I like jazz."), topics.REMEMBER)

        every = await browse(g, tenant)
        facts = await browse(g, tenant, source="fact", limit=1)
        none = await browse(g, tenant.model_copy(update={"user_address": "bob"}))
        unscoped = await g.request(AdminRequest(op="memory.browse"), topics.ADMIN, AdminReply)
    assert every.error is None
    assert every.result is not None
    rows = {r["content"]: r for r in every.result["rows"]}
    assert {"I live in Lisbon", "I live in Porto"} <= set(rows)
    assert "I like jazz." not in rows  # another tenant's
    lisbon, porto = rows["I live in Lisbon"], rows["I live in Porto"]
    assert (lisbon["status"], lisbon["supersededBy"]) == ("superseded", porto["id"])
    assert lisbon["invalidAt"] == to_ms(SAID + timedelta(days=9))
    assert porto["invalidAt"] is None
    assert lisbon["createdAt"] == to_ms(SAID)
    assert 0.0 <= porto["decayScore"] <= 1.0
    assert {r["source"] for r in every.result["rows"]} >= {"fact", "entity"}
    assert facts.result == {"rows": [porto]}  # newest first, of that source only
    assert none.result == {"rows": []}
    assert unscoped.error == "agentWallet is required"


async def test_graph_browse_lists_entities_and_current_and_replaced_relations(
    start: Start,
) -> None:
    tenant = scope()
    async with start(["facts", "admin"]) as g:
        await g.publish(extracted(tenant, "Lisbon", SAID), topics.FACTS)
        await g.publish(extracted(tenant, "Porto", SAID + timedelta(days=9)), topics.FACTS)
        reply = await g.request(
            AdminRequest(op="graph.browse", scope=tenant), topics.ADMIN, AdminReply
        )
        stranger = await g.request(
            AdminRequest(op="graph.browse", scope=scope()), topics.ADMIN, AdminReply
        )
    assert reply.result is not None
    names = sorted(e["content"].split(" (")[0] for e in reply.result["entities"])
    assert names == ["Ana", "Lisbon", "Porto"]
    links = {(r["sourceName"], r["type"], r["targetName"]): r for r in reply.result["relations"]}
    assert set(links) == {("Ana", "LIVES_IN", "Lisbon"), ("Ana", "LIVES_IN", "Porto")}
    assert links[("Ana", "LIVES_IN", "Porto")]["current"] is True
    replaced = links[("Ana", "LIVES_IN", "Lisbon")]
    assert replaced["current"] is False
    assert replaced["invalidAt"] == to_ms(SAID + timedelta(days=9))
    assert stranger.result == {"entities": [], "relations": []}
