"""Metadata tags of memory rows: what an item `scan` selects rows by (issue 30)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def tagged_value(metadata: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted `path` under `metadata` (None when absent)."""
    value: Any = metadata
    for label in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(label)
    return value


def holds_tags(metadata: Mapping[str, Any], tagged: Mapping[str, str]) -> bool:
    """Whether `metadata` holds every `tagged` value: equal to it, or a list holding it."""
    for path, wanted in tagged.items():
        value = tagged_value(metadata, path)
        if value != wanted and not (isinstance(value, list) and wanted in value):
            return False
    return True
