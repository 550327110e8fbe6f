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


async def test_read_pages_by_bytes_and_names_the_first_row_left_out(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`read` shares `scan`'s page (`page_of`): rows until the reply would pass `PAGE_BYTES`,
    then `next_after` names the first row it left out, which the caller asks for again."""
    from services.groups.items import scan as scanning

    tenant = scope()
    async with start(["facts", "items"]) as g:
        for name in ("a", "b", "c"):
            meta = {"lg": {"tags": ["p"], "texts": []}}
            await g.publish(
                MemoryRemembered(scope=tenant, content=f"item {name}", metadata=meta),
                topics.REMEMBER,
            )
        listed = await g.request(
            ItemRequest(scope=tenant, op="scan", tagged={"lg.tags": "p"}, limit=10),
            topics.ITEMS,
            ItemReply,
        )
        ids = sorted(r["id"] for r in listed.items)
        assert len(ids) == 3

        async def read(asked: list[str]) -> ItemReply:
            request = ItemRequest(scope=tenant, op="read", ids=asked)
            return await g.request(request, topics.ITEMS, ItemReply)

        whole = await read(ids)
        assert sorted(r["id"] for r in whole.items) == ids
        assert whole.next_after is None

        monkeypatch.setattr(scanning, "PAGE_BYTES", 1)  # one row a page
        first = await read(ids)
        assert len(first.items) == 1
        assert first.next_after is not None
        assert first.next_after not in {r["id"] for r in first.items}
        rest = [i for i in ids if i not in {r["id"] for r in first.items}]
        assert first.next_after in rest
