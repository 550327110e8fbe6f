"""A remembered text is read for the graph as a turn is (issue 32): its typed relations and,
around them, the untyped links with the sentence as evidence."""

from __future__ import annotations

from engine.ingest.extraction.rules.extractor import RuleBasedExtractor
from engine.ingest.extraction.types import ExtractionPolicy
from engine.ingest.remember import remembered_links
from schemas.inputs import memory_remembered


async def test_a_remembered_employer_is_linked_to_the_user_with_its_sentence() -> None:
    text = "These days I'm employed by Initech as an analyst."
    event = memory_remembered({"agentWallet": "A", "userAddress": "U", "content": text})

    found = await remembered_links(event, RuleBasedExtractor(), ExtractionPolicy())

    assert found is not None
    linked = {(r.source, r.target): r.evidence for r in found.relations}
    assert any("Initech" in (s, t) for s, t in linked)
    assert text in linked.values()
    assert "Initech" in {e.name for e in found.entities}
