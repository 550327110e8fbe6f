"""Requests and replies (request-reply over Kafka through `reply_to` + `correlation_id`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from schemas.bounds import EpochMs
from schemas.events import Contract
from schemas.item_writes import MAX_READS, ItemWrites
from schemas.jobs import JobStatus
from schemas.limits import INT64_MAX, DocumentObject, LargeJsonObject
from schemas.scope import Id, Scope
from schemas.search_defaults import (
    BUDGET_CHARS_PER_HIT,
    BUDGET_MAX_HITS,
    BUDGET_MAX_ITEMS,
    MAX_ITEM_CHARS,
    MAX_ITEM_CHARS_MAX,
    MAX_ITEMS,
    MAX_ITEMS_MAX,
    PER_LAYER_LIMIT,
    PER_LAYER_LIMIT_MAX,
)

LayerName = Literal["working", "scene", "graph", "patterns", "archives", "vectors"]
ALL_LAYERS: tuple[LayerName, ...] = ("working", "scene", "graph", "patterns", "archives", "vectors")
MAX_QUERY_CHARS = 4_000
MAX_WAIT_SECONDS = 300
"""The longest a write waits to be processed (`wait=true`): the gateway's `waitTimeout` and
the SDK's `timeout` / `wait_timeout` alike, so a stopped group never holds a caller forever."""
MetadataPath = Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64}){0,3}$")]
"""A dotted path under a row's `metadata` (no `$`, no empty label), as `scan` names them."""


class ContextRequest(Contract):
    """pre_turn (reference §6.1). Counts are at least 1 (refused below: see
    `schemas.inputs`, which lowers a count above its maximum to it); no budget is None."""

    scope: Scope
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    layers: list[LayerName] = Field(
        default_factory=lambda: list(ALL_LAYERS), min_length=1, max_length=len(ALL_LAYERS)
    )
    limit: int | None = Field(default=None, ge=1, le=PER_LAYER_LIMIT_MAX)
    """Hits per layer; None: see `shape`."""
    max_items: int | None = Field(default=None, ge=1, le=MAX_ITEMS_MAX)
    """Items in the packed context; None: see `shape`."""
    max_item_chars: int = Field(default=MAX_ITEM_CHARS, ge=1, le=MAX_ITEM_CHARS_MAX)
    budget_chars: int | None = Field(default=None, ge=1, le=INT64_MAX)
    include_raw: bool = False
    as_of: EpochMs | None = None
    """Milliseconds since epoch: recall what was true then (facts replaced later included)."""

    def shape(self) -> tuple[int, int]:
        """(hits per layer, items at most). Given counts are kept. Without a budget the
        absent ones are reference §6.1's 5 and 8. With only a budget, the budget shapes the
        context (issue 16: a caller who gives a budget wants it used): each layer is asked
        for one hit per `BUDGET_CHARS_PER_HIT` characters (5 to `BUDGET_MAX_HITS`) and items
        are taken until the budget is full."""
        if self.budget_chars is None:
            return self.limit or PER_LAYER_LIMIT, self.max_items or MAX_ITEMS
        wanted = -(-self.budget_chars // BUDGET_CHARS_PER_HIT)
        limit = self.limit or max(PER_LAYER_LIMIT, min(BUDGET_MAX_HITS, wanted))
        return limit, self.max_items or BUDGET_MAX_ITEMS


class ContextItem(Contract):
    layer: str
    text: str
    id: str | None = None
    score: float | None = None
    source: str | None = None
    created_at: int | None = None


class ContextUsage(Contract):
    characters: int
    raw_characters: int
    budget_characters: int | None = None
    saved_characters_vs_raw: int
    items: int


class ContextReply(Contract):
    """The packed "Memory context" (reference §6.6). `error` is set instead when the
    request could not be served (the client raises it rather than timing out)."""

    context_id: str = ""
    prompt: str | None = None
    items: list[ContextItem] = Field(default_factory=list)
    totals: dict[str, int] = Field(default_factory=dict)
    context_usage: ContextUsage | None = None
    omitted: dict[str, int] = Field(default_factory=dict)
    raw: dict[str, list[dict[str, Any]]] | None = None
    cached: bool = False
    error: str | None = None


class LayerSearchRequest(Contract):
    scope: Scope
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    layers: list[LayerName] = Field(
        default_factory=lambda: list(ALL_LAYERS), min_length=1, max_length=len(ALL_LAYERS)
    )
    limit: int = Field(default=PER_LAYER_LIMIT, ge=1, le=PER_LAYER_LIMIT_MAX)
    as_of: EpochMs | None = None


class LayerSearchReply(Contract):
    """`layers`: each layer's items as the layer returns them; `items`: every hit of every
    layer in one list, best first by the layer's score (in [0, 1], higher is more
    relevant; unscored hits last)."""

    query: str = ""
    layers: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    totals: dict[str, int] = Field(default_factory=dict)
    items: list[ContextItem] = Field(default_factory=list)
    cached: bool = False
    error: str | None = None


MAX_TRANSCRIPT_PAGE = 200
"""Messages of one transcript page at most."""
MAX_LIST_ITEMS = 200
"""Upper bound on the rows of one item `list`."""


class ItemRequest(Contract):
    """One item operation, always within an explicit scope (agent, and user when the item
    is a user's): an item outside it is reported as not found. `list` (no `id`) answers the
    scope's `limit` newest active facts, newest first (a scope without a user: the agent's
    user-less facts only); with `as_of`, the facts true at that time. `forget` (no `id`)
    erases every record of the scope's user (`engine.upkeep.erasure`; refused without a
    `userAddress`) and answers the counts in `ItemReply.erased`. `restore` makes a
    soft-deleted item visible again; `history` answers the item's changes
    (`ItemReply.history`, its newest `limit`, oldest first), also of a deleted or purged item.
    `actor` names the requester in the item history (the gateway sets it from the credential;
    an SDK client from its own `actor`). `scan` (no `id`) pages through the scope's active
    rows whose metadata holds every `tagged` value (a key is a dotted path under `metadata`;
    the value equals it or is a list holding it), by ascending id from after `after`, at most
    `limit` a page (`ItemReply.next_after` names the next page's `after`); with `query`, each
    row also gets a score (`ItemReply.scores`): the best cosine between the query and the
    texts listed at `metadata.<texts_at>`, embedded by the deployment's embedder (issue 30).
    `read` answers the visible rows among `ids` (`next_after`: the first id left out of a full
    reply); `write` applies `writes` (distinct ids) in one bulk write, then answers as `read`."""

    scope: Scope
    op: Literal[
        "get", "update", "delete", "resolve", "list", "forget", "restore", "history", "scan",
        "read", "write",
    ]  # fmt: skip
    id: Id | None = Field(default=None, min_length=1, max_length=200)
    """Required by every op but `list` and `forget`."""
    limit: int = Field(default=50, ge=1, le=MAX_LIST_ITEMS)
    """`list` and `history` only: how many rows or entries at most."""
    as_of: EpochMs | None = None
    """`list` only: list the facts valid then (ms since epoch), a fact replaced since
    included; None lists the current ones."""
    actor: str | None = Field(default=None, min_length=1, max_length=200)
    content: str | None = Field(default=None, max_length=4_000)
    metadata: DocumentObject | None = None
    retention: str | None = Field(default=None, max_length=32)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    status: str | None = Field(default=None, max_length=32)
    hard: bool = False
    resolution: str | None = Field(default=None, max_length=16)
    winning_id: Id | None = Field(default=None, max_length=200)
    reason: str | None = Field(default=None, max_length=1_000)
    tagged: dict[MetadataPath, Annotated[str, Field(max_length=512)]] | None = Field(
        default=None, max_length=4
    )
    """`scan` only: metadata paths and the value each row holds there."""
    after: Id | None = Field(default=None, max_length=200)
    """`scan` only: the page starts after this row id (None: at the first)."""
    query: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY_CHARS)
    """`scan` only: score each row against this text."""
    texts_at: MetadataPath | None = None
    """`scan` with `query`: the metadata path of each row's list of texts to score."""
    ids: list[Id] | None = Field(default=None, min_length=1, max_length=MAX_READS)
    writes: ItemWrites | None = None

    @model_validator(mode="after")
    def _id_unless_list(self) -> ItemRequest:
        if self.op not in ("list", "forget", "scan", "read", "write") and self.id is None:
            raise ValueError("id is required")
        if not {"read": self.ids, "write": self.writes}.get(self.op, True):
            raise ValueError(f"{self.op} needs {'ids' if self.op == 'read' else 'writes'}")
        return self


class ItemReply(Contract):
    """`items` are the rows after the operation (without embeddings; for `history`, the item
    as it is now, none when it is deleted or purged); `history` the item's changes, oldest
    first: `{id, itemId, kind, at, cause: {kind, id, name}, actor, oldContent, newContent,
    details}` (kinds and details: `engine.history`); `not_found` is set when nothing
    matched within the scope (HTTP 404), `error` for bad input (400); `erased` (`forget`
    only) counts what was removed, by kind."""

    items: list[dict[str, Any]] = Field(default_factory=list)
    history: list[dict[str, Any]] = Field(default_factory=list)
    not_found: bool = False
    error: str | None = None
    erased: dict[str, int] | None = None
    scores: dict[str, float | None] | None = None
    """`scan` with `query`: each row's score by id, a cosine in [-1, 1] (higher is more
    similar); None for a row without texts."""
    next_after: str | None = None
    """`scan`: the `after` of the next page; None when this page is the last."""


class SessionRequest(Contract):
    """Read (`get`) or edit (`update`, reference §7.2) one working-memory session by its
    session id, always within an explicit scope (agent, and user when the session is a
    user's): a session outside it is reported as not found. `update` merges by default
    (context lines appended, the newest kept; objects merged key by key, new keys win) or,
    with `replace`, replaces each given part wholesale. `compress` (reference §10.9)
    summarises the session's transcript (else its working buffer) into one embedded
    `archive` memory row of the session's own scope, once per content; `model` is the
    caller's choice of LLM model (the configured one when None; unused without an LLM).
    `transcript` reads the session's stored messages in timestamp order, a page at a time:
    the newest `limit` before position `before` (the end when None), oldest first (see
    `engine.upkeep.transcripts`)."""

    scope: Scope
    op: Literal["get", "update", "compress", "transcript"]
    session_id: Id = Field(min_length=1, max_length=600)
    context: list[Annotated[str, Field(max_length=4_000)]] | None = Field(
        default=None, max_length=100
    )
    entities: DocumentObject | None = None
    state: DocumentObject | None = None
    metadata: DocumentObject | None = None
    replace: bool = False
    model: str | None = Field(default=None, min_length=1, max_length=200)
    limit: int = Field(default=MAX_TRANSCRIPT_PAGE, ge=1, le=MAX_TRANSCRIPT_PAGE)
    """`transcript` only: messages of the page at most."""
    before: int | None = Field(default=None, ge=0, le=INT64_MAX)
    """`transcript` only: the page ends before this position (None: at the end)."""


class SessionReply(Contract):
    """`session` is the session after the operation (the reference's row, camelCase, times
    in ms, without turn vectors); for `compress`, `compression` is `{summary,
    entitiesExtracted, entities, keyFacts, vectorId, stored, summariser}` instead; for
    `transcript`, `transcript` is `{sessionId, agentWallet, userAddress, threadId, …,
    messages: [{role, content, timestamp, turnId?, name?, toolCalls?, raw?}], start, total,
    summary, createdAt, updatedAt}` (`start` is the first message's position).
    `not_found` is set when nothing matched within the scope (HTTP 404), `error` for bad
    input (400), with `upstream` when the LLM failed (502)."""

    session: dict[str, Any] | None = None
    compression: dict[str, Any] | None = None
    transcript: dict[str, Any] | None = None
    not_found: bool = False
    upstream: bool = False
    error: str | None = None


AdminOp = Literal[
    "patterns.list",
    "patterns.get",
    "patterns.validate",
    "patterns.promote",
    "skills.list",
    "skills.get",
    "jobs.get",
    "jobs.list",
    "stats",
    "evals.run",
    "evals.get",
    "evals.list",
    "archives.sync",
    "memory.browse",
    "graph.browse",
    "memory.export",
]
"""The reads, the one promotion and the archive pin of `memory.admin.v1` (reference §9,
§10.2, §10.6, §12, §13), and the console's views of a tenant's memory."""


class AdminRequest(Contract):
    """One admin operation. `scope` is the caller's tenant: patterns and skills outside it
    are not found; `jobs.get` without a scope reads any job (an unrestricted caller), with
    one only a job naming that agent; `jobs.list` lists the newest `limit` job records,
    newest first (without a scope every job's, with one only those naming that agent;
    with `status` only those in it); `stats` without `userAddress` counts every user of
    the agent (counts only, no content); `archives.sync` pins archive `id` of the scope's
    agent (of its user when `userAddress` is set, else of any of the agent's users: it
    answers only `{ipfsHash, pinned}`). `memory.browse` lists the scope's newest stored rows
    (of `source` only, when set; replaced facts included) and `graph.browse` its entities
    and their relations, both for the exact tenant (no user: the agent's user-less rows).
    `memory.export` answers one page of a user's export (`userAddress` required), from the
    cursor `body["cursor"]` (absent: the first page, with the header).
    `body` is the raw `evals.run` body."""

    op: AdminOp
    scope: Scope | None = None
    id: Id | None = Field(default=None, min_length=1, max_length=200)
    limit: int = Field(default=20, ge=1, le=100)
    name: str | None = Field(default=None, max_length=200)
    """`patterns.promote`: the skill's name."""
    pattern_type: str | None = Field(default=None, max_length=64)
    min_success_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    category: str | None = Field(default=None, max_length=64)
    status: JobStatus | None = None
    """`jobs.list`: only the records in this status."""
    source: str | None = Field(default=None, min_length=1, max_length=64)
    """`memory.browse`: only rows of this source (`fact`, `entity`, `session`, …)."""
    body: LargeJsonObject | None = None


class AdminReply(Contract):
    """`result` is the JSON answer (camelCase keys), of the model
    `schemas.admin.ADMIN_RESULTS[op]` (kept an object on the wire: see `schemas.admin`);
    `not_found` is set when nothing matched within the scope (HTTP 404), `error` for bad
    input (400)."""

    result: dict[str, Any] | None = None
    not_found: bool = False
    error: str | None = None


class ReliabilityRequest(Contract):
    """Workflow reliability of one agent (reference §14 `getAgentReliability`), within an
    explicit scope: `agentWallet` = the workflow wallet, `userAddress` = the runs' user (a
    scope without a user reads only checkpoints stored without one); the thread is
    ignored (every run counts). Only the scope's own rows are read."""

    scope: Scope
    agent: Id = Field(min_length=1, max_length=200)
    last: int = Field(default=50, ge=1, le=500)
    """How many of the newest step learnings and evaluations count."""


class ReliabilityReply(Contract):
    """`runs` rows counted (the newest `last` step learnings and evaluations); `graded` those
    of them with a success value (true or false); `success_rate` in [0, 1] the share of the
    graded rows that succeeded (0.0 when none is graded: a checkpoint without a success value
    is not a failed run); `avg_quality` the mean numeric quality score of the counted rows
    (0.0 when none has one). `error` is set for bad input instead."""

    agent: str = ""
    runs: int = 0
    graded: int = 0
    success_rate: float = 0.0
    avg_quality: float = 0.0
    error: str | None = None


MAX_RERANK_DOCUMENTS = 100
"""Documents of one rerank request."""
MAX_RERANK_DOCUMENT_CHARS = 1_500
"""Characters of one rerank document. With `MAX_RERANK_DOCUMENTS` the request and its reply
(which repeats every content) stay below `MAX_MESSAGE_BYTES` even fully JSON-escaped."""


class RerankDocument(Contract):
    """`score` is the caller's own score (for instance the first-stage retrieval's), used
    only to break ties between equally relevant documents."""

    content: str = Field(max_length=MAX_RERANK_DOCUMENT_CHARS)
    score: float | None = Field(
        default=None, allow_inf_nan=False, description="Your own score: breaks ties only."
    )


class RerankRequest(Contract):
    """Rank `documents` by relevance to `query` (reference §13.4 `POST rerank`), with the
    configured reranker or, without one, the layers' local relevance. Not fail-soft: a
    reranker failure is answered with an error."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    documents: list[RerankDocument] = Field(min_length=1, max_length=MAX_RERANK_DOCUMENTS)
    top_k: int | None = Field(default=None, ge=1, le=100, description="Default: every document.")
    """How many results at most; None = every document."""


class RerankResult(Contract):
    """`index` into the request's documents; `relevance` in [0, 1] (higher is more
    relevant; 0 for a document the ranker did not score, such as a blank one); `score` =
    relevance + 1e-6 × the caller's score, what results are sorted by (descending)."""

    index: int = Field(description="Index into `documents`.")
    content: str
    score: float = Field(description="relevance + 1e-6 × your score; results sort by it.")
    relevance: float = Field(description="In [0, 1], higher is more relevant.")


class RerankReply(Contract):
    """`results` best first; `ranker` names what ranked them (`local`, or the provider and
    model). `error` is set instead for bad input, with `upstream` when the reranker provider
    (or the embedder) failed (HTTP 502)."""

    results: list[RerankResult] = Field(default_factory=list)
    ranker: str = Field(default="", description="`local`, or the reranker provider and model.")
    upstream: bool = False
    error: str | None = None
