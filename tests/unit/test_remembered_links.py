"""A remembered text is read for the graph as a turn is (issue 32): its typed relations and,
around them, the links with the sentence as evidence, typed where the typer can."""

from __future__ import annotations

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.extraction.relation_typer import RelationTyper
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


async def test_with_the_typer_a_remembered_employer_and_office_are_typed(
    minilm: LocalMiniLMEmbedder,
) -> None:
    """The facts group passes the relation typer (stop 43): what no rule phrases is typed
    from the words between its ends, as a turn's links are."""
    typer = RelationTyper(minilm)
    typed = set()
    for text in (
        "These days I'm employed by Initech as an analyst.",
        "Initech's head office sits in Austin, Texas.",
    ):
        event = memory_remembered({"agentWallet": "A", "userAddress": "U", "content": text})
        found = await remembered_links(event, RuleBasedExtractor(), ExtractionPolicy(), typer)
        assert found is not None
        typed |= {(r.source, r.type, r.target) for r in found.relations if r.evidence == text}
    assert ("user", "WORKS_AT", "Initech") in typed
    assert ("Initech", "BASED_IN", "Austin") in typed
