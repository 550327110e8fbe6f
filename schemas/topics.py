"""Every Kafka topic name, its partition count and the partition keys of the events on it. No
other module spells a topic name; publishers key their events with the functions here, so a
reader that waits for a group's progress on an event's partition
(`services.stream.progress`) finds the partition the event went to.

Partition counts are explicit because the local broker gives auto-created topics 4 partitions
(docs/operations.md#local-servers); `services.stream.topics.create_topics` creates these before any
consumer starts.
"""

from typing import Final, Literal

TURNS: Final = "memory.turns.v1"
"""`TurnRecorded` events (post_turn), keyed by the thread session id."""
REMEMBER: Final = "memory.remember.v1"
"""`MemoryRemembered` events (explicit remember), keyed by agent|user."""
FACTS: Final = "memory.facts.v1"
"""`FactsExtracted`: what the extraction group read in a turn, keyed by agent|user so one
tenant's facts are stored in order (replaying this topic rebuilds the graph without
re-running the extractor)."""
CHANGED: Final = "memory.changed.v1"
"""`MemoryChanged`, published by writers after their write is durable; keyed by agent."""
SEARCH: Final = "memory.search.v1"
"""`ContextRequest` (pre_turn) with `reply_to`; answered with `ContextReply`."""
LAYER_SEARCH: Final = "memory.layers.search.v1"
"""`LayerSearchRequest` with `reply_to`; answered with `LayerSearchReply`."""
RERANK: Final = "memory.rerank.v1"
"""`RerankRequest` (rank caller-supplied documents against a query) with `reply_to`;
answered with `RerankReply` by the search group, which owns the reranker."""
ITEMS: Final = "memory.items.v1"
"""`ItemRequest` (get/update/delete/resolve one memory item) with `reply_to`."""
SESSIONS: Final = "memory.sessions.v1"
"""`SessionRequest` (read or edit one working-memory session) with `reply_to`; answered with
`SessionReply`."""
ADMIN: Final = "memory.admin.v1"
"""`AdminRequest` (patterns, skills, job records, stats, evals) with `reply_to`; answered
with `AdminReply`."""
KNOWLEDGE: Final = "memory.knowledge.v1"
"""`KnowledgeSubmitted` (a knowledge document to chunk and index), keyed by agent|user."""
WORKFLOWS: Final = "memory.workflows.v1"
"""`WorkflowCheckpointRecorded` (a workflow run's checkpoint), keyed by workflow wallet|run."""
RELIABILITY: Final = "memory.workflows.reliability.v1"
"""`ReliabilityRequest` with `reply_to`; answered with `ReliabilityReply`."""
JOBS: Final = "memory.jobs.v1"
"""`JobRequested` (a maintenance job: type, parameters, its time), run by the jobs group."""
EMBEDDINGS: Final = "memory.embeddings.v1"
"""`EmbeddingRequested`: stored texts whose vectors the `embeddings` group computes, keyed by
the thread (published by the transcripts group after its writes are durable)."""
DLQ: Final = "memory.dlq.v1"
"""Messages that failed after bounded retries, with their error and origin."""
INGRESS: Final = "memory.ingress.v1"
"""`IngressEvent`s: what agent runtimes publish when the deployment seals its events (issue
31); the `sealing` group seals each into its source topic (`INGRESS_TARGETS`), keyed as
the runtime keyed it. A short retention (the request class): nothing is derived from it."""

REPLY_PREFIX: Final = "memory.replies."
"""Each client process owns one reply topic: `REPLY_PREFIX + <client id>` (1 partition)."""

PARTITIONS: Final[dict[str, int]] = {
    TURNS: 8,
    REMEMBER: 4,
    FACTS: 4,
    CHANGED: 4,
    SEARCH: 4,
    LAYER_SEARCH: 4,
    RERANK: 2,
    ITEMS: 4,
    SESSIONS: 4,
    ADMIN: 2,
    KNOWLEDGE: 4,
    WORKFLOWS: 4,
    RELIABILITY: 2,
    JOBS: 2,
    EMBEDDINGS: 8,
    DLQ: 1,
    INGRESS: 8,
}


SCALED: Final = frozenset(
    {TURNS, REMEMBER, FACTS, CHANGED, KNOWLEDGE, WORKFLOWS, EMBEDDINGS, INGRESS}
)
"""The stream topics whose writer groups scale by processes: created with at least the
`partitions` setting's count."""


SOURCES: Final = frozenset({TURNS, REMEMBER, FACTS, KNOWLEDGE, WORKFLOWS})
"""The topics whose records cannot be derived again: `replay` rebuilds memory from them
(the facts topic holds what the extractor read, so a replay does not run it again). They
keep every record by default (issue 31: the log is the source of truth)."""
DERIVED: Final = frozenset({CHANGED, EMBEDDINGS, DLQ})
"""Topics written from what the sources hold (announcements, embedding work, dead letters,
whose originals are in their source topic): a finite retention loses nothing a replay
needs. Every other topic carries requests and replies."""

INGRESS_TARGETS: Final = (TURNS, REMEMBER, KNOWLEDGE, WORKFLOWS)
"""The source topics agent runtimes publish to (through `INGRESS` when events are sealed)."""
SEALED: Final = SOURCES | {EMBEDDINGS}
"""The topics whose events carry user content: sealed under tenant keys when an event key is
configured (`engine.sealing`)."""

RetentionClass = Literal["source", "derived", "requests"]


def retention_class(topic: str) -> RetentionClass:
    """`source` (`SOURCES`), `derived` (`DERIVED`) or `requests` (request and reply topics,
    the clients' reply topics included)."""
    if topic in SOURCES:
        return "source"
    return "derived" if topic in DERIVED else "requests"


DAY_MS: Final = 86_400_000
DEFAULT_RETENTION_MS: Final[dict[RetentionClass, int]] = {
    "source": -1,
    "derived": 7 * DAY_MS,
    "requests": DAY_MS,
}
"""`retention.ms` by class when nothing else is set (-1: every record is kept). The settings
(`MNEMOSTREAM_SOURCE_RETENTION_MS`, …) change them for the group processes; a client (the
SDK) that creates the topics first uses these."""


def default_retention_ms(topic: str) -> int:
    """`DEFAULT_RETENTION_MS` of the topic's class."""
    return DEFAULT_RETENTION_MS[retention_class(topic)]


def partitions(at_least: int) -> dict[str, int]:
    """Every topic's partition count, the `SCALED` ones raised to `at_least`."""
    return {
        topic: max(count, at_least) if topic in SCALED else count
        for topic, count in PARTITIONS.items()
    }


def thread_key(thread_id: str | None) -> str:
    """The key of a thread's `EmbeddingRequested` on `EMBEDDINGS` (the empty string for
    texts of no thread)."""
    return thread_id or ""


def agent_key(agent_wallet: str) -> str:
    """The key of an agent's `MemoryChanged` on `CHANGED` (and of the facts group's
    `EmbeddingRequested` on `EMBEDDINGS`)."""
    return agent_wallet


def tenant_key(agent_wallet: str, user_address: str | None) -> str:
    """agent|user: the key of a tenant's events on `REMEMBER`, `FACTS` and `KNOWLEDGE`, so
    one tenant's writes stay in order."""
    return f"{agent_wallet}|{user_address or ''}"


def reply_topic(client_id: str) -> str:
    """The reply topic owned by one client process."""
    return f"{REPLY_PREFIX}{client_id}"
