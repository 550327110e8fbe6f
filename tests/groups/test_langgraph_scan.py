"""The items group's `scan` (what the LangGraph store ranks from, issue 30) on the in-memory
stores: rows selected by a metadata tag within the exact tenant, paged by id, each scored by
its best listed text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas import topics
from schemas.events import MemoryRemembered
from schemas.requests import ItemReply, ItemRequest
from tests.groups.conftest import Start, scope


async def test_scan_pages_tagged_rows_of_the_tenant_and_scores_the_best_text(start: Start) -> None:
    tenant, other = scope(), scope()
    async with start(["facts", "items"]) as g:
        texts = {"a": ["red apple", "zebra stripes"], "b": ["blue car"], "c": []}
        for name, listed in texts.items():
            meta = {"lg": {"tags": ["p1", "p2"], "texts": listed}}
            await g.publish(
                MemoryRemembered(scope=tenant, content=f"item {name}", metadata=meta),
                topics.REMEMBER,
            )
        await g.publish(
            MemoryRemembered(scope=tenant, content="untagged", metadata={"lg": {"tags": []}}),
            topics.REMEMBER,
        )
        await g.publish(
            MemoryRemembered(
                scope=other, content="other tenant", metadata={"lg": {"tags": ["p1"]}}
            ),
            topics.REMEMBER,
        )

        async def page(after: str | None, limit: int, query: str | None = None) -> ItemReply:
            request = ItemRequest(
                scope=tenant,
                op="scan",
                tagged={"lg.tags": "p1"},
                after=after,
                limit=limit,
                query=query,
                texts_at="lg.texts",
            )
            return await g.request(request, topics.ITEMS, ItemReply)

        first = await page(None, 2)
        assert len(first.items) == 2
        assert first.next_after == first.items[-1]["id"]
        second = await page(first.next_after, 2)
        assert len(second.items) == 1
        assert second.next_after is None
        rows = first.items + second.items
        assert sorted(r["content"] for r in rows) == ["item a", "item b", "item c"]
        assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)

        scored = await page(None, 10, query="zebra stripes")
        by_content = {r["content"]: scored.scores[r["id"]] for r in scored.items}  # type: ignore[index]
        assert by_content["item a"] == pytest.approx(1.0, abs=1e-5)  # its best text
        assert by_content["item b"] is not None
        assert by_content["item b"] < 0.99
        assert by_content["item c"] is None  # no texts, no score

    # a path that is not a plain dotted name (an operator, say) is refused by the contract
    with pytest.raises(ValidationError):
        ItemRequest(scope=tenant, op="scan", tagged={"$where": "1"})
