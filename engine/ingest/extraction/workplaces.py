"""A workplace shared through a work relation (issue 32): "Torunn manages Kristof over at
Copperleaf Dental", "Clothilde is Konstantin's boss at Ferrowind". When a sentence types
one person a manager or colleague of another (`MANAGER_OF`, `COLLEAGUE_OF`) and one of
the two `WORKS_AT` an organisation in the same sentence, the other's untyped link to that
organisation in that sentence becomes `WORKS_AT` too: whom one manages or works with at a
place works there. Nothing is typed without such a link (the two ends said in one
statement) or across sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.ingest.extraction.types import UNTYPED, ExtractedRelation

WORK_TIES = frozenset({"MANAGER_OF", "COLLEAGUE_OF"})
"""Relations between two people who work at the same place."""


def share_workplaces(relations: Sequence[ExtractedRelation]) -> list[ExtractedRelation]:
    """`relations` with each untyped link from a person to the workplace of their manager,
    report or colleague said in the same sentence typed `WORKS_AT` (see the module doc)."""
    out = list(relations)
    typed = [r for r in relations if r.type not in UNTYPED and r.evidence]
    works = {
        (r.source.casefold(), r.target.casefold(), r.evidence)
        for r in typed
        if r.type == "WORKS_AT"
    }
    for tie in (r for r in typed if r.type in WORK_TIES):
        pair = (tie.source.casefold(), tie.target.casefold())
        for i, link in enumerate(out):
            if link.type not in UNTYPED or link.evidence != tie.evidence:
                continue
            ends = (link.source.casefold(), link.target.casefold())
            for person, org, name, place in (
                (ends[0], ends[1], link.source, link.target),
                (ends[1], ends[0], link.target, link.source),
            ):
                if person not in pair:
                    continue
                other = pair[1] if person == pair[0] else pair[0]
                if (other, org, tie.evidence) in works:
                    out[i] = ExtractedRelation(name, "WORKS_AT", place, link.evidence)
                    break
    return out
