"""The one set of search defaults and caps (`pre_turn` and layer search), read by the request
contracts (`schemas.requests`), the request parsers (`schemas.inputs`), the engine's packer
(`engine.retrieval.packing`), the gateway and the SDK. They live in `schemas/` because the
contracts may import nothing outside it; the engine takes them from here."""

from __future__ import annotations

from typing import Final

PER_LAYER_LIMIT: Final = 5
"""Hits asked of each layer (`limit`)."""
PER_LAYER_LIMIT_MAX: Final = 20
MAX_ITEMS: Final = 8
"""Items in the packed context (`maxItems`)."""
MAX_ITEMS_MAX: Final = 24
MAX_ITEM_CHARS: Final = 500
"""Characters of one packed item (`maxItemChars`)."""
MAX_ITEM_CHARS_MAX: Final = 2_000

BUDGET_CHARS_PER_HIT: Final = 60
"""With only a budget (no `limit`), each layer is asked for one hit per this many budget
characters, between `PER_LAYER_LIMIT` and `BUDGET_MAX_HITS`."""
BUDGET_MAX_HITS: Final = 60
"""With only a budget, the hits asked of each layer at most: more than a caller may ask for
(`PER_LAYER_LIMIT_MAX`), so a large budget is filled when the tenant holds enough relevant
memory (at 20 a layer, a 4,000-character budget was left half empty)."""
BUDGET_MAX_ITEMS: Final = 200
"""With only a budget (no `maxItems`), the items are capped by the budget, and by this."""
