"""The relation tests' shared way to run the offline path on a user's message: the rules,
the untyped links and the typer, as `extract_turn` runs them."""

from __future__ import annotations

from engine.ingest.extraction.relation_typer import RelationTyper, link_turn
from engine.ingest.extraction.rules import RuleBasedExtractor
from engine.ingest.extraction.types import UNTYPED, ExtractionPolicy, TurnText

Triple = tuple[str, str, str]


async def typed(typer: RelationTyper, *texts: str) -> set[Triple]:
    """The typed relations of the user's `texts`, one message each, as (source, type, target)."""
    said = [TurnText("user", t) for t in texts]
    found = await link_turn(
        said, await RuleBasedExtractor().extract(said, ExtractionPolicy()), typer
    )
    return {(r.source, r.type, r.target) for r in found.relations if r.type not in UNTYPED}
