"""Late turn vectors for the in-memory transcripts and working buffers (the embedding stage's
fills): the one rule both follow, as the Mongo adapters share `push_turn_vectors`."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import replace
from typing import TypeVar

from engine.records import Transcript, TurnVectorFill, WorkingBuffer

D = TypeVar("D", Transcript, WorkingBuffer)


def attach_turn_vectors(
    docs: MutableMapping[str, D], fills: Sequence[TurnVectorFill], keep: int
) -> int:
    """Attach each fill's vector to its existing document unless that turn has one there,
    keeping the newest `keep`; how many were attached."""
    added = 0
    for fill in fills:
        key = fill.scope.document_key(fill.session_id)
        if key not in docs:
            continue  # no such document: nothing to attach to
        doc: D = docs[key]
        if any(v.turn_id == fill.vector.turn_id for v in doc.turn_vectors):
            continue
        kept = [*doc.turn_vectors, fill.vector][-keep:]
        docs[key] = replace(doc, turn_vectors=kept)
        added += 1
    return added
