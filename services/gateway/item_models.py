"""The item routes' answers (`services.gateway.items`): the gateway's own envelopes around
the items group's rows (camelCase, times in ms since epoch)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from services.gateway.models import Answer


class ItemResponse(Answer):
    item: dict[str, Any]


class ItemUpdated(Answer):
    updated: bool
    item: dict[str, Any]


class ItemDeleted(Answer):
    deleted: bool
    hardDeleted: bool
    item: dict[str, Any] | None = None


class ItemRestored(Answer):
    restored: bool
    item: dict[str, Any]


class ItemValidity(Answer):
    """An item's validity interval (ms since epoch): from `validFrom` until `invalidAt`
    (null while current), replaced by `supersededBy`."""

    validFrom: int | None = None
    invalidAt: int | None = None
    supersededBy: str | None = None


class ItemHistoryResponse(Answer):
    """An item's history (`engine.history`): the changes oldest first, and the item
    as it is now."""

    itemId: str
    item: dict[str, Any] | None = None
    validity: ItemValidity | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)


class ConflictResolved(Answer):
    resolved: bool
    memoryId: str
    items: list[dict[str, Any]] = Field(default_factory=list)
