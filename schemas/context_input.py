"""The pre_turn body (reference §6.1) as one model, `ContextInput`; `ContextInput.request`
makes the `ContextRequest`. The raw layer search's body is `LayerSearchInput` (its
`request`: the `LayerSearchRequest`). The loose rules and the refusals are
`schemas.bodies`'.

A per-page count above its maximum is lowered to it (`limit` 20, `maxItems` 24,
`maxItemChars` 2,000); one below 1 is refused (422). An absent `limit` or `maxItems` stays
None: the search fills a given budget, or takes reference §6.1's 5 and 8 without one
(`ContextRequest.shape`). Unknown layers are dropped; none left (or not a list) means all.
`includeRaw` is on for a literal `true` only. Times are milliseconds since epoch.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, BeforeValidator, Field, WithJsonSchema, field_validator
from pydantic_core.core_schema import ValidationInfo

from schemas.bodies import (
    SCOPE_ALIASES,
    Alias,
    Body,
    LooseCount,
    Refused,
    ScopeInput,
    Text,
    Time,
)
from schemas.requests import (
    ALL_LAYERS,
    MAX_QUERY_CHARS,
    ContextRequest,
    LayerName,
    LayerSearchRequest,
)
from schemas.scope import Scope, ScopeError
from schemas.search_defaults import (
    MAX_ITEM_CHARS,
    MAX_ITEM_CHARS_MAX,
    MAX_ITEMS_MAX,
    PER_LAYER_LIMIT,
    PER_LAYER_LIMIT_MAX,
)


def _known_layers(value: object) -> list[LayerName]:
    """The known layer names in the caller's order, once each; none (or not a list) ⇒ all."""
    chosen: list[LayerName] = []
    for name in value if isinstance(value, list) else ():
        for known in ALL_LAYERS:
            if name == known and known not in chosen:
                chosen.append(known)
    return chosen or list(ALL_LAYERS)


def _listed_layers(value: object) -> list[LayerName]:
    """`_known_layers` of a list of names; anything else is refused (the layer search's
    rule, stricter than pre_turn's); null is all."""
    if value is None:
        return list(ALL_LAYERS)
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise Refused("must be a list of layer names")
    return _known_layers(value)


def _string_or_absent(value: object) -> object:
    """`str()` of reference §0: anything but a string is absent."""
    return value if isinstance(value, str) else None


Layers = Annotated[
    list[LayerName],
    BeforeValidator(_known_layers),
    WithJsonSchema({"type": "array", "items": {"type": "string"}}),
]
ListedLayers = Annotated[
    list[LayerName],
    BeforeValidator(_listed_layers),
    WithJsonSchema({"type": "array", "items": {"type": "string"}}),
]
Query = Annotated[Text, BeforeValidator(_string_or_absent)]


class BudgetInput(Body):
    """The packed context's character budget (held exactly); absent means no budget."""

    max_characters: LooseCount | None = Field(
        default=None,
        validation_alias=AliasChoices("maxCharacters", "max_chars"),
        description="At least 1 (alias max_chars).",
    )

    ALIASES = (Alias(("maxCharacters", "max_chars"), "null"),)


class ContextInput(ScopeInput):
    """pre_turn (reference §6.1): `query` and the scope are required."""

    query: Query = Field(default=None, max_length=MAX_QUERY_CHARS, description="Required.")
    layers: Layers = Field(
        default_factory=lambda: list(ALL_LAYERS),
        description="Known layers in the caller's order (unknown ones dropped); default all.",
    )
    limit: LooseCount | None = Field(
        default=None,
        description="Per layer, at most 20. Default 5; with only a budget, 1 per 150 characters.",
    )
    max_items: LooseCount | None = Field(
        default=None,
        validation_alias=AliasChoices("maxItems", "max_items"),
        description="At most 24. Default 8; with only a budget, until it is full.",
    )
    max_item_chars: LooseCount | None = Field(
        default=None,
        validation_alias=AliasChoices("maxItemChars", "max_item_chars"),
        description="Default 500, at most 2000.",
    )
    budget: BudgetInput | None = None
    max_context_characters: LooseCount | None = Field(
        default=None,
        validation_alias=AliasChoices("maxContextCharacters", "max_context_chars"),
        description="Alias of budget.maxCharacters (alias max_context_chars).",
    )
    include_raw: Annotated[Any, WithJsonSchema({"type": "boolean"})] = Field(
        default=None, validation_alias="includeRaw", description="On for `true` only."
    )
    as_of: Time = Field(
        default=None,
        validation_alias=AliasChoices("asOf", "as_of"),
        description="ISO-8601 or ms since epoch (alias as_of): recall what was true then.",
    )

    ALIASES = (
        *SCOPE_ALIASES,
        Alias(("maxItems", "max_items"), "null"),
        Alias(("maxItemChars", "max_item_chars"), "null"),
        Alias(("maxContextCharacters", "max_context_chars"), "null"),
        Alias(("asOf", "as_of"), "null"),
    )

    HIGHEST: ClassVar[dict[str, int]] = {
        "limit": PER_LAYER_LIMIT_MAX,
        "max_items": MAX_ITEMS_MAX,
        "max_item_chars": MAX_ITEM_CHARS_MAX,
    }
    """The per-page counts and the maximum each is lowered to (reference §6.1)."""

    @field_validator(*HIGHEST)
    @classmethod
    def _lowered(cls, value: int | None, info: ValidationInfo) -> int | None:
        return None if value is None else min(value, cls.HIGHEST[str(info.field_name)])

    def request(self, scope: Scope | None = None) -> ContextRequest:
        """The `ContextRequest`, in `scope` (default: this body's, checked). The query is
        checked here, after the caller's scope was allowed (403 before 400)."""
        scope = scope or self.scope()
        if self.query is None:
            raise ScopeError("query is required")
        inner = self.budget.max_characters if self.budget is not None else None
        # every field was checked by this model (and the scope by `Scope`): no second pass
        return ContextRequest.model_construct(
            scope=scope,
            query=self.query,
            layers=self.layers,
            limit=self.limit,
            max_items=self.max_items,
            max_item_chars=MAX_ITEM_CHARS if self.max_item_chars is None else self.max_item_chars,
            budget_chars=inner if inner is not None else self.max_context_characters,
            include_raw=self.include_raw is True,
            as_of=self.as_of,
        )


class LayerSearchInput(ScopeInput):
    """The raw layer search (`/layers/search`, `/items/search`; the reference's `/search`
    asks the graph layer): `query` and the scope are required."""

    query: Query = Field(default=None, max_length=MAX_QUERY_CHARS, description="Required.")
    layers: ListedLayers = Field(
        default_factory=lambda: list(ALL_LAYERS),
        description="Known layers in the caller's order (unknown ones dropped); default all.",
    )
    limit: LooseCount | None = Field(
        default=None, description=f"Per layer: default {PER_LAYER_LIMIT}, at most 20."
    )

    ALIASES = SCOPE_ALIASES

    @field_validator("limit")
    @classmethod
    def _lowered(cls, value: int | None) -> int | None:
        return None if value is None else min(value, PER_LAYER_LIMIT_MAX)

    def request(self, scope: Scope | None = None) -> LayerSearchRequest:
        """The `LayerSearchRequest`, in `scope` (default: this body's, checked); the query
        is checked here, after the caller's scope was allowed (403 before 400)."""
        scope = scope or self.scope()
        if self.query is None:
            raise ScopeError("query is required")
        # every field was checked by this model (and the scope by `ScopeInput`)
        return LayerSearchRequest.model_construct(
            scope=scope,
            query=self.query,
            layers=self.layers,
            limit=PER_LAYER_LIMIT if self.limit is None else self.limit,
        )
