"""What "processed" means for the SDK's writes: the consumer groups a turn or a remember goes
through, in order, as the groups are wired (`services.groups`), as `Stage`s for
`services.stream.progress.Progress.wait`.

A turn is read by three groups side by side: `transcripts` (transcript, working buffer, the
turn's `session` row), `extraction` (→ `FactsExtracted` on `memory.facts.v1`, keyed
agent|user → `facts`) and `patterns`. With deferred embedding (`embedding.deferred`, the
default) a row is written at once and its vector filled later by `embeddings`: the
transcripts group asks for the turn's vectors keyed by its thread, the facts group for its
facts' vectors keyed by the agent. Every writer announces `MemoryChanged` (keyed by the
agent) before it commits, and the `invalidation` group applies it to the query cache: only
then does pre_turn stop answering from what it cached before the write. So every wait ends
with the invalidation group on the agent's partition of `memory.changed.v1`.

A remember is read by `facts.remember` (the fact, and its graph links, whose entity vectors
may be asked of `embeddings`, keyed by the agent).
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas import topics
from schemas.events import MemoryRemembered, TurnRecorded
from schemas.scope import Scope
from services.stream.progress import Stage

__all__ = [
    "TURN_GROUPS",
    "remember_paths",
    "settled",
    "through_ingress",
    "turn_paths",
    "visible_groups",
]

TURN_GROUPS: tuple[str, ...] = ("transcripts", "embeddings", "extraction", "facts", "patterns")
"""The groups `MemoryClient.wait_processed` can wait for."""


def visible_groups(deferred: bool) -> tuple[str, ...]:
    """The groups after which a turn is visible to pre_turn: the transcripts group, and the
    embedding stage when vectors are deferred (a row without its vector is found by its
    words only)."""
    return ("transcripts", "embeddings") if deferred else ("transcripts",)


def settled(scope: Scope) -> tuple[Stage, ...]:
    """The last stage of every write: the invalidation group on the agent's partition."""
    return (Stage("invalidation", topics.CHANGED, topics.agent_key(scope.agent_wallet)),)


def turn_paths(
    event: TurnRecorded, groups: Sequence[str], *, deferred: bool
) -> list[tuple[Stage, ...]]:
    """One path per named group (`TURN_GROUPS`), each from the turn itself to that group.
    `deferred`: whether the deployment defers embedding (then `facts` includes the vectors
    of the facts it stored). ValueError for an unknown group."""
    agent, user = event.scope.agent_wallet, event.scope.user_address
    own = {name: Stage(name, topics.TURNS) for name in ("transcripts", "extraction", "patterns")}
    facts: tuple[Stage, ...] = (
        own["extraction"],
        Stage("facts", topics.FACTS, topics.tenant_key(agent, user)),
    )
    if deferred:
        facts += (Stage("embeddings", topics.EMBEDDINGS, topics.agent_key(agent)),)
    paths: dict[str, tuple[Stage, ...]] = {
        "transcripts": (own["transcripts"],),
        "embeddings": (
            own["transcripts"],
            Stage("embeddings", topics.EMBEDDINGS, topics.thread_key(event.thread_id)),
        ),
        "extraction": (own["extraction"],),
        "facts": facts,
        "patterns": (own["patterns"],),
    }
    unknown = [name for name in groups if name not in paths]
    if unknown:
        raise ValueError(
            f"unknown group {unknown[0]!r}: a turn is processed by {', '.join(TURN_GROUPS)}"
        )
    return [paths[name] for name in dict.fromkeys(groups)]


def remember_paths(event: MemoryRemembered, *, deferred: bool) -> list[tuple[Stage, ...]]:
    """The path of a remember: the facts group's remember subscriber, then (deferred
    embedding) the vectors of the entities its text named."""
    path: tuple[Stage, ...] = (Stage("facts.remember", topics.REMEMBER),)
    if deferred:
        key = topics.agent_key(event.scope.agent_wallet)
        path += (Stage("embeddings", topics.EMBEDDINGS, key),)
    return [path]


def through_ingress(paths: list[tuple[Stage, ...]], key: str) -> list[tuple[Stage, ...]]:
    """`paths` of a write published to `topics.INGRESS` (a sealed deployment): the sealing
    group first (it publishes the sealed event to its source topic before it commits), then
    each path, its first stage found on the source topic's partition of `key`."""
    sealing = Stage("sealing", topics.INGRESS)
    return [
        (sealing, *(Stage(s.group, s.topic, key) if s.key is None else s for s in path))
        for path in paths
    ]
