"""The edits' bodies as one model each: an item's (PATCH /items/{id}, reference §13.2),
`ItemPatchInput`, whose `request` makes the `ItemRequest` (op `update`) the items group
applies, and a working session's (PATCH /sessions/{id}/working, reference §7.2),
`WorkingPatchInput`, whose `request` makes the `SessionRequest` (op `update`). The loose
rules and the refusals are `schemas.bodies`'.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import Field

from schemas.bodies import ScopeInput, Text
from schemas.bounds import parse_contract
from schemas.limits import DocumentObject
from schemas.remember_input import Confidence
from schemas.requests import ItemRequest, SessionRequest
from schemas.scope import Scope

R = TypeVar("R", ItemRequest, SessionRequest)


def _update(request: type[R], given: dict[str, Any], body: ScopeInput, fields: set[str]) -> R:
    """The `update` request of `given` (what the caller names: the id, the actor, the
    scope), which the request checks alone, with `body`'s `fields` and `metadata`: the body
    checked those already, so they are not validated again."""
    edit = parse_contract(request, {**given, "op": "update"})
    changes = {name: getattr(body, name) for name in fields}
    return edit.model_copy(update={**changes, "metadata": body.metadata})


class ItemPatchInput(ScopeInput):
    """An item's new content (re-embedded), retention, confidence or status, within the
    scope; `metadata` here is merged into the item's metadata. Blank text is absent (no
    change)."""

    content: Text = Field(default=None, max_length=4_000)
    retention: Text = Field(default=None, max_length=32)
    confidence: Confidence | None = Field(default=None, description="From 0 to 1.")
    status: Text = Field(default=None, max_length=32, description="active, superseded or archived.")

    def request(self, item_id: str, scope: Scope | None = None, *, actor: str) -> ItemRequest:
        """The `update` of item `item_id` in `scope` (default: this body's, checked), made
        by `actor` (who the item's history names). The id is checked here (`ScopeError`)."""
        given = {"id": item_id, "actor": actor, "scope": scope or self.scope()}
        return _update(ItemRequest, given, self, {"content", "retention", "confidence", "status"})


class WorkingPatchInput(ScopeInput):
    """A working session's edit within the scope's tenant; `metadata` here is the session's
    metadata."""

    context: list[Annotated[str, Field(max_length=4_000)]] | None = Field(
        default=None,
        max_length=100,
        description="Lines to append (the newest are kept), or the new context.",
    )
    entities: DocumentObject | None = None
    state: DocumentObject | None = None
    replace: bool | None = Field(
        default=None, description="Replace context/entities/state/metadata instead of merging."
    )

    def request(self, session_id: str, scope: Scope | None = None) -> SessionRequest:
        """The `update` of session `session_id` in `scope`'s tenant (default: this body's,
        checked). The id is checked here (`ScopeError`)."""
        given = {"session_id": session_id, "scope": (scope or self.scope()).tenant()}
        edit = _update(SessionRequest, given, self, {"context", "entities", "state"})
        return edit.model_copy(update={"replace": bool(self.replace)})
