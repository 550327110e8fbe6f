"""Retrieval evals over the runtime's real search, stored per agent (reference §12, fixing
§16.28). The HTTP gateway and the Kafka admin handler call these three functions.

Each case runs through `MemorySearch.search`, the layer search (limit `k`, default 5; default
every layer). Its hits are the returned items; the same hits are packed with `pre_turn`'s
defaults (8 items, 500 characters each, no budget) and the prompt's length is the case's
`contextCharacters`: what an agent would receive for that query. Packing the hits already
found (rather than calling `context`, which searches again) keeps the latency that of one
search and counts no access for eval reads (the reference bumped counters on evals, §16.14).
The search goes through the query cache like any read: a cached case reports `cached: true`
and its latency is a cache read.

Scores and their definitions: `engine.evals.harness`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.evals.harness import evaluate, layer_searcher, parse_request
from engine.evals.wire import run_wire
from services.runtime import Runtime

MAX_LIST = 100


async def run_eval(rt: Runtime, body: Mapping[str, Any], now_ms: int) -> dict[str, Any]:
    """Run, store and return an eval (camelCase: `evalRunId`, `status`, `scores`, `results`,
    `createdAt` in ms since epoch, `k`, `layers`, `agentWallet`, `scope`).

    `body`: `agentWallet|agent_id` (required) and the other scope aliases, `testCases`
    (required, each `{query, expected?, expectedMemoryId?}` with at least one label),
    `k|limit` (1-20, default 5), `layers` (default all). Raises `InputRejected` on bad input,
    `DependencyFailed` when a store or the embedder fails."""
    request = parse_request(body)
    search = layer_searcher(rt.search, request.scope, request.layers, request.k, now_ms)
    run = await evaluate(search, request, now_ms)
    await rt.evals.save(run)
    return run_wire(run)


async def get_eval(rt: Runtime, run_id: str, agent_wallet: str) -> dict[str, Any] | None:
    """The stored run, or None when there is none for this agent (another agent's run is
    not found)."""
    run = await rt.evals.get(run_id, agent_wallet)
    return run_wire(run) if run is not None else None


async def list_evals(rt: Runtime, agent_wallet: str, limit: int) -> list[dict[str, Any]]:
    """The agent's stored runs, newest first; `limit` is clamped to 1-100."""
    runs = await rt.evals.list(agent_wallet, max(1, min(MAX_LIST, limit)))
    return [run_wire(r) for r in runs]
