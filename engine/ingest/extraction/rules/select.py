"""Selection of the proposed facts: facts under `policy.min_confidence` or over
`policy.max_chars` are dropped, duplicates (case- and space-insensitive) keep their best
confidence, each slot keeps one fact (the most confident, the later one on a tie), the
`policy.max_facts` most confident remain in said order; entities and relations are then
gathered from the remaining facts only."""

from __future__ import annotations

from dataclasses import replace

from engine.ingest.extraction.rules.registry import _Candidate
from engine.ingest.extraction.types import (
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelation,
    Extraction,
    ExtractionPolicy,
)


def _select(found: list[_Candidate], policy: ExtractionPolicy) -> list[_Candidate]:
    """Policy limits, dedupe, one fact per slot, the most confident `max_facts` in said
    order."""
    best: dict[str, tuple[int, _Candidate]] = {}
    for order, cand in enumerate(found):
        text = cand.text.strip().rstrip(".,;:!? ")
        cand = replace(cand, text=text)
        if cand.confidence < policy.min_confidence or len(text) > policy.max_chars:
            continue
        key = " ".join(text.lower().split())
        if key not in best or cand.confidence > best[key][1].confidence:
            best[key] = (order, cand)
    by_slot: dict[str, tuple[int, _Candidate]] = {}
    kept: list[tuple[int, _Candidate]] = []
    for order, cand in sorted(best.values(), key=lambda item: item[0]):
        if cand.slot is None:
            kept.append((order, cand))
        elif cand.slot not in by_slot or cand.confidence >= by_slot[cand.slot][1].confidence:
            by_slot[cand.slot] = (order, cand)
    kept.extend(by_slot.values())
    top = sorted(kept, key=lambda item: (-item[1].confidence, item[0]))[: policy.max_facts]
    return [cand for _, cand in sorted(top, key=lambda item: item[0])]


def _assemble(chosen: list[_Candidate]) -> Extraction:
    """The extraction of the chosen facts: their entities (deduplicated by case- and
    space-insensitive name, first kept) and relations (deduplicated, first kept)."""
    entities: dict[str, ExtractedEntity] = {}
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for cand in chosen:
        for entity in cand.entities:
            entities.setdefault(" ".join(entity.name.casefold().split()), entity)
        for rel in cand.relations:
            relations.setdefault((rel.source, rel.type, rel.target), rel)
    facts = [ExtractedFact(c.text, c.type, c.confidence, c.slot) for c in chosen]
    return Extraction(facts, list(entities.values()), list(relations.values()))
