"""What a layer search returns for one memory: the uniform `Hit` the packer ranks."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LAYER_PRIORITY: Mapping[str, float] = {
    "working": 1.15,
    "patterns": 1.12,
    "graph": 1.08,
    "vectors": 1.02,
    "scene": 0.96,
    "archives": 0.88,
}
"""Packing prior `P[L]` per layer (reference §6.3); any other layer gets 0.9."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One layer hit.

    `text` is what the packer shows (already the layer's summary: e.g. the newest working
    lines joined by newlines). `score` is the layer's own relevance in [0, 1] (higher is more
    relevant; None when the layer has none). Times are milliseconds since epoch.
    `raw` is the layer item as returned to callers of layer search (JSON-serialisable).
    `context` is the whole turn when `text` is the one message of it that answers
    (`engine.retrieval.units`): the packer shows the turn instead when the budget allows.
    """

    layer: str
    id: str
    text: str
    score: float | None = None
    created_at: int | None = None
    confidence: float | None = None
    importance: float | None = None
    access_count: int = 0
    source: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    context: str | None = None
    unit: int | None = None
    """Which message of its row the hit is (its row's `MemoryRow.units`), None for the whole
    row: one row may answer as several hits, one per message; the packer shows each as its
    message and the whole turn at most once."""
    turn: str | None = None
    """The turn the hit shows ("<session id>#<turn id>"), None when it shows no one turn: a
    turn found by the scene layer whole and by the vectors layer as its messages is shown
    as the messages (each ranked by its own vector), once."""


def memories(hits: Sequence[Hit]) -> list[Hit]:
    """The hits, in order, with a row that answered as several of its messages (`unit`)
    once, at its first: it counts, and is listed, as one memory."""
    seen: set[tuple[str | None, str]] = set()
    out: list[Hit] = []
    for hit in hits:
        if hit.unit is not None:
            key = (hit.source, hit.id)
            if key in seen:
                continue
            seen.add(key)
        out.append(hit)
    return out


def raw_characters(layers: Mapping[str, Sequence[Hit]], header: str, separator: str) -> int:
    """The length of the layers' raw items as JSON, laid out as a prompt (`header`, then
    the items joined by `separator`): what the caller would have read without packing."""
    raws = [
        # dict(): `raw` may be any Mapping, which json cannot serialise directly.
        json.dumps(dict(hit.raw), sort_keys=True, default=str)
        for hits in layers.values()
        for hit in memories(hits)
    ]
    if not raws:
        return 0
    return len((header + separator + separator.join(raws)).strip())
