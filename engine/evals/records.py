"""The records of an eval run (what `engine.evals.harness` computes) and the port that keeps
them (`EvalStore`). Plain data: this module imports no feature module, so the stores can name
`EvalRun` without depending on the harness."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.errors import InputRejected

STATUS_COMPLETED = "completed"


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One labelled query: at least one of `expected` / `expected_memory_id` is set."""

    query: str
    expected: str | None = None
    expected_memory_id: str | None = None

    def __post_init__(self) -> None:
        if self.expected is None and self.expected_memory_id is None:
            raise InputRejected(
                "a test case needs expected or expectedMemoryId: an unlabelled case cannot "
                "be scored"
            )


@dataclass(frozen=True, slots=True)
class ReturnedItem:
    """One item a search returned: its layer, id and the text it shows."""

    layer: str
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What one search returned for a query. `context_characters` is the length of the
    packed prompt an agent would receive; `cached` tells the answer came from the query
    cache (its latency is then a cache read)."""

    items: Sequence[ReturnedItem]
    context_characters: int
    cached: bool = False


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    layer: str
    id: str
    relevant: bool


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case; `latency_ms` is milliseconds, `precision` in [0, 1]."""

    case: EvalCase
    items: tuple[ItemVerdict, ...]
    context_characters: int
    latency_ms: float
    cached: bool = False

    @property
    def returned(self) -> int:
        return len(self.items)

    @property
    def relevant(self) -> int:
        return sum(i.relevant for i in self.items)

    @property
    def hit(self) -> bool:
        return self.relevant > 0

    @property
    def precision(self) -> float:
        return self.relevant / self.returned if self.returned else 0.0


@dataclass(frozen=True, slots=True)
class EvalScores:
    """Scores of a run (definitions in the module docstring); latencies in milliseconds."""

    recall_at_k: float
    precision_at_k: float
    mean_precision: float
    avg_context_characters: float
    latency_p50_ms: float
    latency_p95_ms: float
    avg_latency_ms: float
    cases: int
    hits: int
    returned: int
    relevant: int


@dataclass(frozen=True, slots=True)
class EvalRun:
    """A stored run. `created_at` is milliseconds since epoch; `scope` is the canonical
    (camelCase) scope the cases were searched in."""

    eval_run_id: str
    scope: Mapping[str, Any]
    created_at: int
    k: int
    layers: tuple[str, ...]
    scores: EvalScores
    results: tuple[CaseResult, ...]
    status: str = STATUS_COMPLETED

    @property
    def agent_wallet(self) -> str:
        return str(self.scope["agentWallet"])


class EvalStore(Protocol):
    """Eval runs, keyed by `eval_run_id`, readable only by the agent that ran them (another
    agent's run is "not found", never an error that would confirm it exists)."""

    async def save(self, run: EvalRun) -> None:
        """Store the run; saving a run with the same id again replaces it."""
        ...

    async def get(self, run_id: str, agent_wallet: str) -> EvalRun | None:
        """The run when it exists and belongs to `agent_wallet`, else None."""
        ...

    async def list(self, agent_wallet: str, limit: int) -> builtins.list[EvalRun]:
        """The agent's runs, newest first (`created_at` descending, then id descending), at
        most `limit`."""
        ...
