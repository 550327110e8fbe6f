"""One turn in, one `FactsExtracted` out (or None when nothing durable was said)."""

from __future__ import annotations

from engine.ingest.extraction.relation_typer import RelationTyper, link_turn
from engine.ingest.extraction.types import ExtractionPolicy, Extractor, TurnText
from engine.ingest.speakers import spoken
from schemas.events import EntityItem, FactItem, FactsExtracted, RelationItem, TurnRecorded

TURN_MESSAGES = 6
"""The extractor reads the turn's last 6 user/assistant messages (reference §7.3)."""


async def extract_turn(
    event: TurnRecorded,
    extractor: Extractor,
    policy: ExtractionPolicy,
    typer: RelationTyper | None = None,
) -> FactsExtracted | None:
    """Run the extractor on a turn; the result carries the turn's scope (with its thread),
    ids and time, so storing it later is independent of when extraction ran. With a
    `typer`, the untyped links it can type become typed relations (`relation_typer`)."""
    said = [spoken(m.role, m.content, m.name) for m in event.messages]
    messages = [TurnText(s.role, s.text, s.name) for s in said if s.role in ("user", "assistant")][
        -TURN_MESSAGES:
    ]
    if not any(m.role == "user" for m in messages):
        return None
    # the extractor's typed relations, then the untyped links around them (whichever
    # extractor: the rules or an LLM), typed where the typer can
    found = await link_turn(messages, await extractor.extract(messages, policy), typer)
    if not (found.facts or found.entities or found.relations):
        return None
    return FactsExtracted(
        occurred_at=event.occurred_at,
        scope=event.scope.model_copy(update={"thread_id": event.thread_id}),
        turn_id=event.turn_id,
        session_id=event.session_id,
        extractor=extractor.name,
        facts=[
            FactItem(text=f.text, type=f.type, confidence=f.confidence, slot=f.slot)
            for f in found.facts
        ],
        entities=[EntityItem(name=e.name, type=e.type, summary=e.summary) for e in found.entities],
        relations=[
            RelationItem(source=r.source, type=r.type, target=r.target, evidence=r.evidence)
            for r in found.relations
        ],
    )
