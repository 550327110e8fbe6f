"""Retrieval evals (reference §12), scored so the numbers mean what they say (fixes §16.28).

An eval runs labelled queries through an injected search and scores what came back.

* A case is `query` plus what a correct answer holds: `expected` (text) and/or
  `expectedMemoryId`. An unlabelled case is rejected: it cannot be scored (the reference
  counted "anything returned" as a hit).
* One returned item is *relevant* when its id equals `expectedMemoryId`, or its text contains
  `expected` case-insensitively. Only the item's own text is searched: never its id, its
  metadata or the JSON of the reply (the reference matched ids and metadata by accident).
* Per case: `returned` items (over every layer, a row found by two layers counts twice, as
  it was returned twice), `relevant` items among them, `hit` (any relevant), `precision`
  (relevant / returned, 0 when nothing was returned), the characters of the packed context
  an agent would receive, and the search latency in milliseconds.
* Scores: `recallAtK` = hits / cases; `precisionAtK` = Σrelevant / Σreturned (the share of
  returned items that are relevant, 0 when nothing was returned; the reference divided the
  number of hit *cases* by the returned items); `meanPrecision` = mean per-case precision;
  `avgContextCharacters`; `latencyP50Ms` / `latencyP95Ms` (nearest-rank percentiles, each an
  observed latency); `avgLatencyMs`.

Runs are records (`EvalRun`) kept by an `EvalStore`, readable only by the agent that ran them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import InputRejected
from engine.evals.records import (
    CaseResult,
    EvalCase,
    EvalRun,
    EvalScores,
    ItemVerdict,
    Retrieved,
    ReturnedItem,
)
from engine.retrieval.hits import Hit
from engine.retrieval.packing import pack
from schemas.bodies import parse_body
from schemas.eval_input import DEFAULT_K, EvalInput
from schemas.ids import h32
from schemas.requests import ALL_LAYERS, LayerName
from schemas.scope import Scope, ScopeError

if TYPE_CHECKING:  # only the type: the harness runs any search it is given
    from engine.retrieval.search import MemorySearch

RUN_ID_PREFIX = "memeval_"


EvalSearch = Callable[[str], Awaitable[Retrieved]]
"""Query in, what was returned out."""


@dataclass(frozen=True, slots=True)
class EvalRequest:
    scope: Scope
    cases: tuple[EvalCase, ...]
    k: int = DEFAULT_K
    layers: tuple[LayerName, ...] = ALL_LAYERS


# --- parsing --------------------------------------------------------------------------------


def parse_request(body: object) -> EvalRequest:
    """An eval body (reference §12 shape, scope aliases of §1.1 normalised, camelCase or
    snake_case), parsed by its model (`schemas.eval_input.EvalInput`, the gateway's) →
    `EvalRequest`; `InputRejected` with the model's one-line message otherwise."""
    try:
        parsed = parse_body(EvalInput, body)
        scope = parsed.scope()
        cases = parsed.cases()
    except ScopeError as exc:
        raise InputRejected(str(exc)) from None
    return EvalRequest(
        scope=scope,
        cases=tuple(
            EvalCase(
                query=c.query or "", expected=c.expected, expected_memory_id=c.expected_memory_id
            )
            for c in cases
        ),
        k=DEFAULT_K if parsed.k is None else parsed.k,
        layers=tuple(parsed.layers),
    )


# --- scoring --------------------------------------------------------------------------------


def is_relevant(case: EvalCase, item: ReturnedItem) -> bool:
    """The item's id is the expected memory id, or its own text holds `expected`
    (case-insensitive). Ids, metadata and the reply's JSON are never searched."""
    if case.expected_memory_id is not None and item.id == case.expected_memory_id:
        return True
    return case.expected is not None and case.expected.casefold() in item.text.casefold()


def score_case(case: EvalCase, retrieved: Retrieved, latency_ms: float) -> CaseResult:
    return CaseResult(
        case=case,
        items=tuple(ItemVerdict(i.layer, i.id, is_relevant(case, i)) for i in retrieved.items),
        context_characters=retrieved.context_characters,
        latency_ms=latency_ms,
        cached=retrieved.cached,
    )


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (`p` in (0, 100]): an observed value; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def score(results: Sequence[CaseResult]) -> EvalScores:
    """The run's scores (module docstring); every score is 0 for no results."""
    n = len(results)
    hits = sum(r.hit for r in results)
    returned = sum(r.returned for r in results)
    relevant = sum(r.relevant for r in results)
    latencies = [r.latency_ms for r in results]
    return EvalScores(
        recall_at_k=hits / n if n else 0.0,
        precision_at_k=relevant / returned if returned else 0.0,
        mean_precision=sum(r.precision for r in results) / n if n else 0.0,
        avg_context_characters=sum(r.context_characters for r in results) / n if n else 0.0,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        avg_latency_ms=sum(latencies) / n if n else 0.0,
        cases=n,
        hits=hits,
        returned=returned,
        relevant=relevant,
    )


def retrieved_of(
    query: str,
    hits: Mapping[str, Sequence[Hit]],
    layers: Sequence[str],
    now_ms: int,
    *,
    cached: bool = False,
) -> Retrieved:
    """What a layer search returned, as eval items (layer order, then hit order), with the
    characters of the prompt `pre_turn` would pack from the same hits (default packing)."""
    packed = pack(query, hits, layer_order=layers, now_ms=now_ms)
    items = [
        ReturnedItem(layer=name, id=h.id, text=h.text)
        for name in layers
        for h in hits.get(name, ())
    ]
    return Retrieved(items=items, context_characters=packed.characters, cached=cached)


def layer_searcher(
    search: MemorySearch, scope: Scope, layers: Sequence[str], k: int, now_ms: int
) -> EvalSearch:
    """An `EvalSearch` over `MemorySearch.search` (layer search, `k` hits per layer) in
    `scope`: its hits are the returned items, and the prompt `pre_turn` would pack from them
    gives the context characters. No access is counted for eval reads (§16.14)."""

    async def run(query: str) -> Retrieved:
        result = await search.search(scope, query, layers, k, now_ms)
        return retrieved_of(query, result.hits, layers, now_ms, cached=result.cached)

    return run


def run_id(request: EvalRequest, now_ms: int) -> str:
    """`memeval_` + H32 of the scope, time, k, layers and cases: the same request at the same
    millisecond is the same run."""
    payload = json.dumps(
        {
            "scope": request.scope.wire(),
            "at": now_ms,
            "k": request.k,
            "layers": list(request.layers),
            "cases": [[c.query, c.expected, c.expected_memory_id] for c in request.cases],
        },
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return RUN_ID_PREFIX + h32(payload)


async def evaluate(
    search: EvalSearch,
    request: EvalRequest,
    now_ms: int,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> EvalRun:
    """Run every case through `search`, one after another (so latencies do not include
    queueing behind other cases), and score them. `clock` returns seconds."""
    results: list[CaseResult] = []
    for case in request.cases:
        started = clock()
        retrieved = await search(case.query)
        latency_ms = (clock() - started) * 1000
        results.append(score_case(case, retrieved, latency_ms))
    return EvalRun(
        eval_run_id=run_id(request, now_ms),
        scope=request.scope.wire(),
        created_at=now_ms,
        k=request.k,
        layers=tuple(request.layers),
        scores=score(results),
        results=tuple(results),
    )
