"""One write of an items `write` request (`ItemRequest.writes`, issue 30): many rows of one
tenant put, patched or deleted with one bulk write and one change announcement."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from schemas.events import Contract
from schemas.limits import DocumentObject
from schemas.scope import Id

MAX_WRITES = 500
"""Writes of one `write` request at most (the rows it reads back are ids of the request)."""
MAX_READS = 500
"""Ids of one `read` request at most."""


class ItemWrite(Contract):
    """`put`: the row with this id becomes an active fact of the request's scope holding
    `content` (embedded as a document) and `metadata` (merged key by key into what it holds;
    system keys ignored): created when absent (its `metadata.type` is `type`), brought back
    (created anew, at the write's time) when soft-deleted, else updated (its creation time
    kept). `patch`: `metadata` merged into the row when it is visible (else nothing).
    `delete`: a soft delete of the visible row (else nothing)."""

    id: Id = Field(min_length=1, max_length=200)
    op: Literal["put", "patch", "delete"]
    content: str | None = Field(default=None, min_length=1, max_length=4_000)
    metadata: DocumentObject | None = None
    type: str = Field(default="note", min_length=1, max_length=32)


def _distinct(writes: list[ItemWrite]) -> list[ItemWrite]:
    if len({w.id for w in writes}) != len(writes):
        raise ValueError("writes must name distinct ids")
    return writes


ItemWrites = Annotated[
    list[ItemWrite], Field(min_length=1, max_length=MAX_WRITES), AfterValidator(_distinct)
]
"""The writes of one `write` request: 1 to `MAX_WRITES`, distinct ids."""
