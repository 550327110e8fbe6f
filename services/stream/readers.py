"""Which consumer groups read each topic: the names of `services.groups` as the Kafka group
ids carry them after their prefix (`<prefix>.<name>`). Plain data (no FastStream, no store
driver), for the AsyncAPI document and for the consumer lag the gateway's console shows;
`tests/integration/test_asyncapi.py` checks that it matches what the app registers."""

from __future__ import annotations

from typing import Final

from schemas import topics

READERS: Final[dict[str, tuple[str, ...]]] = {
    topics.TURNS: ("transcripts", "extraction", "patterns"),
    topics.REMEMBER: ("facts.remember",),
    topics.FACTS: ("facts",),
    topics.CHANGED: ("invalidation",),
    topics.SEARCH: ("search",),
    topics.LAYER_SEARCH: ("search",),
    topics.RERANK: ("search",),
    topics.ITEMS: ("items",),
    topics.SESSIONS: ("items.sessions",),
    topics.ADMIN: ("admin",),
    topics.KNOWLEDGE: ("knowledge",),
    topics.WORKFLOWS: ("workflows",),
    topics.RELIABILITY: ("workflows.reliability",),
    topics.JOBS: ("jobs",),
    topics.EMBEDDINGS: ("embeddings",),
    topics.DLQ: (),
    topics.INGRESS: ("sealing",),
}
"""Topic → the consumer group names reading it (the DLQ: none, its readers are tools)."""


def topics_by_group() -> dict[str, tuple[str, ...]]:
    """Consumer group name → the topics it reads, groups sorted by name."""
    found: dict[str, list[str]] = {}
    for topic, groups in READERS.items():
        for group in groups:
            found.setdefault(group, []).append(topic)
    return {group: tuple(found[group]) for group in sorted(found)}
