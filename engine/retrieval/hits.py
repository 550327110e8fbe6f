"""What a layer search returns for one memory: the uniform `Hit` the packer ranks."""

from __future__ import annotations

from collections.abc import Mapping
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
