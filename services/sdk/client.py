"""`MemoryClient`: the SDK agent runtimes use to talk to mnemostream over Kafka.

* Writes — `record_turn(...)` (post_turn), `remember(...)`, `index_transcript(...)`,
  `index_knowledge(...)` and `record_checkpoint(...)` (reference §13.3, §14) — take the
  reference's JSON body, validate it at the edge (a bad input raises `ScopeError` with the
  reference's message and nothing is published), publish, and return the published event
  once the broker acknowledged it. Each `publish_*(event)` publishes an event validated
  already.
* Read-your-writes — `record_turn(..., wait=True)` and `remember(..., wait=True)` return once
  the write is stored and visible to pre_turn; `wait_processed(turn_id, groups=[...])` waits
  for other consumer groups (facts, patterns) of a turn this client published. Both follow
  the groups' committed offsets (`services.sdk.waits`, `services.stream.progress`) and raise
  `NotProcessed` (a `TimeoutError` naming the group that is behind) when the time is up; the
  write is published all the same and must not be sent again.
* Reads — `context(...)` (pre_turn), `search_layers(...)` and `reliability(...)` — are
  request-reply (`services.sdk.transport`): a reply with an error (bad filters included,
  which the search group checks) raises `RequestFailed`; no reply within the timeout raises
  `TimeoutError`.
* Items, sessions, admin, jobs and rerank: `services.sdk.operations.Operations`, whose
  replies are returned with their `not_found` and `error`, not raised.

A bad input to a write or a read raises `ScopeError` (`services.sdk.ScopeError`) with a
one-line message naming the field, before anything is published; a number or a time out of
its range raises its subclass `ValueOutOfRange` (`reliability(..., last=0)`: "last: Input
should be greater than or equal to 1"): it is never clamped into range or replaced by a
default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from cachetools import LRUCache
from pydantic import ValidationError

from schemas import topics
from schemas.bodies import parse_body, refused
from schemas.bounds import parse_contract
from schemas.callers import CheckpointInput, KnowledgeInput
from schemas.context_input import ContextInput
from schemas.events import (
    KnowledgeSubmitted,
    MemoryRemembered,
    TurnRecorded,
    WorkflowCheckpointRecorded,
)
from schemas.item_input import ItemPatchInput, WorkingPatchInput
from schemas.remember_input import RememberInput
from schemas.requests import (
    MAX_WAIT_SECONDS,
    ContextReply,
    ContextRequest,
    ItemReply,
    LayerSearchReply,
    LayerSearchRequest,
    ReliabilityReply,
    ReliabilityRequest,
    SessionReply,
)
from schemas.scope import Scope
from schemas.search_defaults import PER_LAYER_LIMIT
from schemas.transcripts import TranscriptInput
from schemas.turn_input import TurnInput
from services.sdk.closing import ClosingHooks
from services.sdk.operations import Operations
from services.sdk.transport import Position, RequestFailed, ScopeInput, checked, scope_of
from services.sdk.waits import (
    remember_paths,
    settled,
    through_ingress,
    turn_paths,
    visible_groups,
)
from services.stream.progress import NotProcessed

__all__ = ["MemoryClient", "NotProcessed", "Position", "RequestFailed"]

KEPT_POSITIONS = 10_000
"""How many of its newest turns a client remembers the positions of (`wait_processed`)."""


def _tenant_key(scope: Scope) -> str:
    """agent|user: one tenant's writes stay in order."""
    return topics.tenant_key(scope.agent_wallet, scope.user_address)


class MemoryClient(ClosingHooks, Operations):
    """Async context manager: `async with MemoryClient(bootstrap) as client: ...`; one
    instance per process is enough (it is concurrency-safe)."""

    @cached_property
    def _positions(self) -> LRUCache[str, tuple[TurnRecorded, Position]]:
        """The newest turns this client published, by turn id (made on the first publish)."""
        return LRUCache(maxsize=KEPT_POSITIONS)

    def _wait_seconds(self, timeout: float | None) -> float:
        """A wait's timeout: the call's (positive and at most `MAX_WAIT_SECONDS`, as the
        gateway's, else ValueError) or the client's."""
        if timeout is None:
            return self.wait_timeout
        if not 0 < timeout <= MAX_WAIT_SECONDS:  # NaN and infinity included
            raise ValueError(
                f"timeout must be a positive number of seconds, at most {MAX_WAIT_SECONDS}, "
                f"not {timeout!r}"
            )
        return timeout

    async def record_turn(
        self,
        body: Mapping[str, Any] | TurnInput,
        *,
        scope: Scope | None = None,
        wait: bool = False,
        timeout: float | None = None,
    ) -> TurnRecorded:
        """post_turn: the reference body (`agentWallet`, `threadId`, `messages` or
        `userMessage` + `assistantMessage`, `toolEvents`, …), or its model
        (`schemas.turn_input.TurnInput`), in `scope` when given (a checked scope, instead of
        the body's). With `wait`, returns once the turn is stored, its vector filled
        (deferred embedding) and the query cache told, so the next `context(...)` sees it;
        `NotProcessed` after `timeout` seconds (default: the client's `wait_timeout`)."""
        try:
            turn = body if isinstance(body, TurnInput) else TurnInput.model_validate(body)
        except ValidationError as exc:  # the one-line refusal, the gateway's 400 or 422
            raise refused(exc) from None
        event = turn.recorded(scope)
        if timeout is not None:  # a bad timeout is refused before publishing
            self._wait_seconds(timeout)
        at = await self.publish(topics.TURNS, event, event.session_id)  # as `publish_turn`
        self._positions[event.turn_id] = (event, at)
        if wait:
            await self.wait_turn(event, at, timeout=timeout)
        return event

    async def publish_turn(self, event: TurnRecorded) -> Position:
        """Publish a validated turn, keyed by its thread session (one thread, one order)."""
        at = await self.publish(topics.TURNS, event, event.session_id)
        self._positions[event.turn_id] = (event, at)
        return at

    async def wait_processed(
        self,
        turn_id: str,
        groups: Sequence[str] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Wait until each consumer group of `groups` has handled the turn `turn_id` (one
        this client published: `ValueError` for another), then until the invalidation
        group has applied what they announced, so pre_turn and the layer search see their
        writes. `groups`: any of `transcripts`, `embeddings` (the turn's vectors),
        `extraction`, `facts` (its extracted facts stored, and their vectors), `patterns`;
        default: those that make the turn visible to pre_turn (`record_turn(wait=True)`).
        `NotProcessed` after `timeout` seconds (default: the client's `wait_timeout`)."""
        found = self._positions.get(turn_id)
        if found is None:
            raise ValueError(
                f"turn {turn_id!r} was not published by this client (or too long ago): "
                "only its own turns' positions are known"
            )
        event, at = found
        await self.wait_turn(event, at, groups, timeout=timeout)

    async def wait_turn(
        self,
        event: TurnRecorded,
        at: Position,
        groups: Sequence[str] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """`wait_processed` for a turn published at `at` (by any client, e.g. the position
        a gateway answered with)."""
        chosen = visible_groups(self.deferred_embeddings) if groups is None else groups
        paths = turn_paths(event, chosen, deferred=self.deferred_embeddings)
        if at.topic == topics.INGRESS:
            paths = through_ingress(paths, event.session_id)
        await self.progress.wait(
            self.group_prefix,
            (at.topic, at.partition, at.offset),
            paths,
            settled(event.scope),
            timeout=self._wait_seconds(timeout),
            what=f"turn {event.turn_id}",
        )

    async def index_transcript(
        self, body: Mapping[str, Any] | TranscriptInput, *, scope: Scope | None = None
    ) -> list[TurnRecorded]:
        """reference §13.3 `transcripts/index`: a whole transcript (`sessionId`, `threadId`,
        `agentWallet`, `messages`, …), or its model (`schemas.transcripts.TranscriptInput`)
        in `scope`, published as one turn per exchange, in order. Returns the turns; `[]`
        (nothing published) when there is no user/assistant text. Indexing the same
        transcript again is idempotent."""
        turns = parse_body(TranscriptInput, body).turns(scope)
        for turn in turns:
            await self.publish_turn(turn)
        return turns

    async def remember(
        self,
        body: Mapping[str, Any] | RememberInput,
        *,
        scope: Scope | None = None,
        wait: bool = False,
        timeout: float | None = None,
    ) -> MemoryRemembered:
        """remember: an explicit fact (`content`, `type`, … and the scope), or its model
        (`schemas.remember_input.RememberInput`) in `scope`, for the tenant's durable
        memory. With `wait`, returns once the fact is stored and visible (as `record_turn`'s
        `wait`)."""
        try:
            fact = body if isinstance(body, RememberInput) else RememberInput.model_validate(body)
        except ValidationError as exc:
            raise refused(exc) from None
        event = fact.remembered(scope)
        if timeout is not None:  # a bad timeout is refused before publishing
            self._wait_seconds(timeout)
        at = await self.publish_remember(event)
        if wait:
            await self.wait_remembered(event, at, timeout=timeout)
        return event

    async def wait_remembered(
        self, event: MemoryRemembered, at: Position, *, timeout: float | None = None
    ) -> None:
        """Wait until the remember published at `at` is stored and visible; `NotProcessed`
        after `timeout` seconds (default: the client's `wait_timeout`)."""
        paths = remember_paths(event, deferred=self.deferred_embeddings)
        if at.topic == topics.INGRESS:
            paths = through_ingress(paths, _tenant_key(event.scope))
        await self.progress.wait(
            self.group_prefix,
            (at.topic, at.partition, at.offset),
            paths,
            settled(event.scope),
            timeout=self._wait_seconds(timeout),
            what=f"remember {event.event_id}",
        )

    async def publish_remember(self, event: MemoryRemembered) -> Position:
        """Publish a validated remember, keyed by agent|user (one tenant's facts in order)."""
        return await self.publish(topics.REMEMBER, event, _tenant_key(event.scope))

    async def index_knowledge(
        self, body: Mapping[str, Any] | KnowledgeInput, *, scope: Scope | None = None
    ) -> KnowledgeSubmitted:
        """Index a knowledge document (`content`, `key`, `uri`, `source`, `metadata` and the
        scope), or its model (`schemas.callers.KnowledgeInput`) in `scope`: the knowledge
        group stores its chunks as `knowledge` rows that pre_turn's vectors layer finds."""
        event = parse_body(KnowledgeInput, body).submitted(scope)
        await self.publish_knowledge(event)
        return event

    async def publish_knowledge(self, event: KnowledgeSubmitted) -> Position:
        """Publish a validated document, keyed by agent|user."""
        return await self.publish(topics.KNOWLEDGE, event, _tenant_key(event.scope))

    async def record_checkpoint(
        self, body: Mapping[str, Any] | CheckpointInput, *, scope: Scope | None = None
    ) -> WorkflowCheckpointRecorded:
        """Record a workflow checkpoint (`agentWallet`/`workflowWallet`, `runId`,
        `userAddress`, `agent`, `type`, `messages`, `step`, `goal`, `success`,
        `qualityScore`), or its model (`schemas.callers.CheckpointInput`) in `scope`."""
        event = parse_body(CheckpointInput, body).recorded(scope)
        await self.publish_checkpoint(event)
        return event

    async def publish_checkpoint(self, event: WorkflowCheckpointRecorded) -> Position:
        """Publish a validated checkpoint, keyed by workflow wallet|run (one run in order)."""
        key = f"{event.scope.agent_wallet}|{event.scope.thread_id or ''}"
        return await self.publish(topics.WORKFLOWS, event, key)

    async def update_item(
        self,
        item_id: str,
        body: Mapping[str, Any] | ItemPatchInput,
        *,
        scope: Scope | None = None,
        actor: str | None = None,
        timeout: float | None = None,
    ) -> ItemReply:
        """Edit one item (PATCH /items/{id}: `content`, `metadata` merged, `retention`,
        `confidence`, `status` and the scope), or its model
        (`schemas.item_input.ItemPatchInput`) in `scope`; answered as `item("update", …)`
        (`actor`: default the client's)."""
        edit = parse_body(ItemPatchInput, body).request(item_id, scope, actor=actor or self.actor)
        return await self._ask(topics.ITEMS, edit, ItemReply, timeout)

    async def update_session(
        self,
        session_id: str,
        body: Mapping[str, Any] | WorkingPatchInput,
        *,
        scope: Scope | None = None,
        timeout: float | None = None,
    ) -> SessionReply:
        """Edit a working session (PATCH /sessions/{id}/working: `context`, `entities`,
        `state`, `metadata`, `replace` and the scope), or its model
        (`schemas.item_input.WorkingPatchInput`) in `scope`; answered as
        `session("update", …)`."""
        request = parse_body(WorkingPatchInput, body).request(session_id, scope)
        return await self._ask(topics.SESSIONS, request, SessionReply, timeout)

    async def context(
        self,
        query: str,
        scope: ScopeInput,
        *,
        layers: Sequence[str] | None = None,
        limit: int | None = None,
        max_items: int | None = None,
        max_item_chars: int | None = None,
        budget_chars: int | None = None,
        include_raw: bool = False,
        as_of: int | str | None = None,
        timeout: float | None = None,
    ) -> ContextReply:
        """pre_turn: the packed Memory context of `query` within `scope`, with the ranges of
        reference §6.1 (`schemas.context_input.ContextInput`): `limit` per layer (at most 20),
        `max_items` (at most 24), `max_item_chars` (500, at most 2,000), `budget_chars`
        (none), `as_of` (milliseconds since epoch or ISO-8601: recall what was true then).
        Without a budget, `limit` and `max_items` default to 5 and 8; with only a budget,
        the budget shapes the context (`ContextRequest.shape`). A count above its maximum is
        lowered to it; one below 1 is refused."""
        checked = scope_of(scope)  # the scope's refusals come first
        options: dict[str, Any] = {
            "query": query,
            "layers": None if layers is None else list(layers),
            "limit": limit,
            "maxItems": max_items,
            "maxItemChars": max_item_chars,
            "budget": None if budget_chars is None else {"maxCharacters": budget_chars},
            "includeRaw": include_raw,
            "asOf": as_of,
        }
        request = parse_body(ContextInput, options).request(checked)
        return await self.request_context(request, timeout=timeout)

    async def request_context(
        self, request: ContextRequest, *, timeout: float | None = None
    ) -> ContextReply:
        """pre_turn with a validated request."""
        return checked(await self._ask(topics.SEARCH, request, ContextReply, timeout))

    async def search_layers(
        self,
        query: str,
        scope: ScopeInput,
        *,
        layers: Sequence[str] | None = None,
        limit: int = PER_LAYER_LIMIT,
        as_of: int | None = None,
        timeout: float | None = None,
    ) -> LayerSearchReply:
        """Raw layer hits (no packing): `limit` (1-20) per layer of `layers` (all when
        None), each layer's in `reply.layers` and all of them ranked in `reply.items`; with
        `as_of` (milliseconds since epoch), what was true then."""
        request = parse_contract(
            LayerSearchRequest,
            {
                "scope": scope_of(scope),
                "query": query,
                "limit": limit,
                "as_of": as_of,
                **({"layers": list(layers)} if layers else {}),
            },
        )
        return await self.request_layers(request, timeout=timeout)

    async def request_layers(
        self, request: LayerSearchRequest, *, timeout: float | None = None
    ) -> LayerSearchReply:
        """The raw layer search with a validated request."""
        return checked(await self._ask(topics.LAYER_SEARCH, request, LayerSearchReply, timeout))

    async def reliability(
        self,
        agent: str,
        scope: ScopeInput,
        *,
        last: int = 50,
        timeout: float | None = None,
    ) -> ReliabilityReply:
        """Reliability of `agent` over the newest `last` (1-500) step learnings and
        evaluations of `scope` (the workflow wallet as `agentWallet`, and the runs'
        `userAddress`): `runs` counted, `graded` (those with a success value) and the
        `success_rate` over the graded ones. `last` outside 1-500 raises `ValueOutOfRange`,
        an empty `agent` `ScopeError`, before anything is sent."""
        request = parse_contract(
            ReliabilityRequest, {"scope": scope_of(scope), "agent": agent, "last": last}
        )
        return checked(await self._ask(topics.RELIABILITY, request, ReliabilityReply, timeout))
